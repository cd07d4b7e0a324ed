// database_ddl.cpp: see database_ddl.hpp.
#include "pg/database_ddl.hpp"

#include "pg/callbacks.hpp"
#include "pg/ddl_holds.hpp"
#include "pg/postgres_headers.hpp"

extern "C" {
#include "commands/dbcommands.h"
#include "commands/defrem.h"
#include "nodes/parsenodes.h"
#include "tcop/utility.h"
#include "utils/acl.h"
}

namespace awa::pg {

namespace {

ProcessUtility_hook_type previous_hook = NULL;

// The value of option `name` in a CREATE/ALTER DATABASE option list, or NULL.
const char *
OptionValue(List *options, const char *name)
{
	ListCell *cell;
	foreach (cell, options) {
		DefElem *option = static_cast<DefElem *>(lfirst(cell));
		if (strcmp(option->defname, name) == 0 && option->arg != NULL)
			return defGetString(option);
	}
	return NULL;
}

// The database `statement` needs without other connections, by name; NULL
// for every other statement.
const char *
DatabaseNeededAlone(Node *statement)
{
	switch (nodeTag(statement)) {
	case T_DropdbStmt:
		return castNode(DropdbStmt, statement)->dbname;
	case T_CreatedbStmt: {
		// Without TEMPLATE, template1 is copied: a template has no worker.
		return OptionValue(castNode(CreatedbStmt, statement)->options, "template");
	}
	case T_RenameStmt: {
		RenameStmt *rename = castNode(RenameStmt, statement);
		return rename->renameType == OBJECT_DATABASE ? rename->subname : NULL;
	}
	case T_AlterDatabaseStmt: {
		AlterDatabaseStmt *alter = castNode(AlterDatabaseStmt, statement);
		return OptionValue(alter->options, "tablespace") != NULL ? alter->dbname : NULL;
	}
	default:
		return NULL;
	}
}

void
RunNext(PlannedStmt *pstmt, const char *query, bool read_only_tree, ProcessUtilityContext context,
        ParamListInfo params, QueryEnvironment *environment, DestReceiver *dest, QueryCompletion *completion)
{
	if (previous_hook != NULL)
		previous_hook(pstmt, query, read_only_tree, context, params, environment, dest, completion);
	else
		standard_ProcessUtility(pstmt, query, read_only_tree, context, params, environment, dest, completion);
}

// The hold lasts until the command's transaction ends (ddl_holds.cpp
// releases it from its transaction callback): DROP DATABASE commits after
// this returns, and a worker started before that commit would find the
// database gone while connecting.
void
HoldingDatabase(PlannedStmt *pstmt, const char *query, bool read_only_tree, ProcessUtilityContext context,
                ParamListInfo params, QueryEnvironment *environment, DestReceiver *dest, QueryCompletion *completion)
{
	const char *name = DatabaseNeededAlone(pstmt->utilityStmt);
	// A name that does not resolve is left to the command to report. Only
	// a role the command could succeed for (the database's owner, or a
	// superuser) moves the worker: anyone else's attempt fails on its own,
	// and must not keep the database's maintenance away by repeating it.
	Oid database = name != NULL ? get_database_oid(name, true) : InvalidOid;
	if (OidIsValid(database) && pg_database_ownercheck(database, GetUserId())) {
		NoteAwaEntered();  // the hold ends in the transaction callbacks
		HoldDatabaseForDdl(database);
	}
	RunNext(pstmt, query, read_only_tree, context, params, environment, dest, completion);
}

}  // namespace

void
InstallDatabaseDdlHook()
{
	previous_hook = ProcessUtility_hook;
	ProcessUtility_hook = HoldingDatabase;
}

}  // namespace awa::pg
