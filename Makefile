# Makefile: PGXS build of the awa extension (C++17) and its test entry points.
# See docs/development.md. `make`, `make install` (as root), then the test
# targets as an ordinary user (initdb refuses root).

EXTENSION = awa
MODULE_big = awa
DATA = awa--0.6.sql

CORE_SRCS = $(wildcard src/core/*.cpp)
PG_SRCS = $(wildcard src/pg/*.cpp)
OBJS = $(patsubst %.cpp,%.o,$(PG_SRCS) $(CORE_SRCS))

PG_CPPFLAGS = -Isrc
PG_CXXFLAGS = -std=c++17 -Wno-register -Wall -Wextra -Wno-unused-parameter -Wno-missing-field-initializers
SHLIB_LINK += -lstdc++

# pg_regress: one file per SQL function family.
REGRESS = setup enqueue enqueue_many claim complete cursor security
REGRESS_OPTS = --inputdir=test --outputdir=test --temp-instance=./tmp_check --temp-config=./test/regress.conf \
               --load-extension=awa

# isolationtester specs.
ISOLATION = two_claimers claim_skips_nothing_open rollback_gap stale_completion
ISOLATION_OPTS = --inputdir=test --outputdir=test/isolation_output --temp-instance=./tmp_check_iso \
                 --temp-config=./test/regress.conf --load-extension=awa

TAP_TESTS = 1
PROVE_TESTS = test/t/*.pl

PG_CONFIG ?= pg_config
PGXS := $(shell $(PG_CONFIG) --pgxs)
include $(PGXS)

# PGXS compiles .cpp to LLVM bitcode with clang without PG_CXXFLAGS.
COMPILE.cxx.bc += -std=c++17 -Wno-register -Isrc

# Header changes rebuild their users.
override CPPFLAGS += -MMD -MP
-include $(OBJS:.o=.d)

# Unit tests of the pure C++ core (GoogleTest), no server needed.
UNIT_SRCS = $(wildcard test/unit/*.cpp)
test/unit/awa_unit_tests: $(UNIT_SRCS) $(CORE_SRCS) $(wildcard src/core/*.hpp)
	$(CXX) -std=c++17 -Wall -Wextra -Isrc -o $@ $(UNIT_SRCS) $(CORE_SRCS) -lgtest -lgtest_main -pthread

unit: test/unit/awa_unit_tests
	test/unit/awa_unit_tests

EXTRA_CLEAN = test/unit/awa_unit_tests src/core/*.d src/pg/*.d test/results test/regression.* \
              test/isolation_output tmp_check_iso tmp_pgtap

.PHONY: unit
