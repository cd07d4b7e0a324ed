// fn_cursor_value.cpp: awa.cursor_value, the read behind the awa.lanes view.
#include "pg/guard.hpp"
#include "pg/sequences.hpp"

extern "C" {
#include "utils/acl.h"
#include "utils/lsyscache.h"
}

using namespace awa::pg;

// awa.cursor_value(seq regclass) -> bigint (0 before the first reservation)
AWA_FUNCTION(awa_cursor_value)
{
	Oid sequence = PG_GETARG_OID(0);
	char kind = get_rel_relkind(sequence);
	if (kind == '\0')
		ereport(ERROR, (errcode(ERRCODE_UNDEFINED_TABLE), errmsg("relation with OID %u does not exist", sequence),
		                errhint("Pass a lane's cursor sequence, as the awa.lanes view does.")));
	if (kind != RELKIND_SEQUENCE)
		ereport(ERROR, (errcode(ERRCODE_WRONG_OBJECT_TYPE), errmsg("\"%s\" is not a sequence", get_rel_name(sequence)),
		                errhint("Pass a lane's cursor sequence, as the awa.lanes view does.")));
	if (pg_class_aclcheck(sequence, GetUserId(), ACL_SELECT | ACL_USAGE) != ACLCHECK_OK)
		ereport(ERROR, (errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
		                errmsg("permission denied for sequence %s", get_rel_name(sequence)),
		                errhint("Lane cursors are readable by awa_admin.")));
	PG_RETURN_INT64(SequenceValue(sequence));
}
