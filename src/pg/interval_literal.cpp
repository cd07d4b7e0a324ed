// interval_literal.cpp: see interval_literal.hpp.
#include "pg/interval_literal.hpp"

extern "C" {
#include "utils/datetime.h"
}

namespace awa::pg {

bool
ParseIntervalLiteral(const char *literal, Interval *out)
{
	char workbuf[256];
	char *field[MAXDATEFIELDS];
	int ftype[MAXDATEFIELDS];
	int fields = 0;
	int dtype = 0;
	struct pg_itm_in itm;
	memset(&itm, 0, sizeof(itm));
	int error = ParseDateTime(literal, workbuf, sizeof(workbuf), field, ftype, MAXDATEFIELDS, &fields);
	if (error == 0)
		error = DecodeInterval(field, ftype, fields, INTERVAL_FULL_RANGE, &dtype, &itm);
	if (error == DTERR_BAD_FORMAT) {  // ISO 8601 ("PT1H"), as interval_in accepts it
		memset(&itm, 0, sizeof(itm));
		error = DecodeISO8601Interval(const_cast<char *>(literal), &dtype, &itm);
	}
	return error == 0 && dtype == DTK_DELTA && itmin2interval(&itm, out) == 0;
}

}  // namespace awa::pg
