# Makefile: PGXS build of the awa extension (C++17) and its test entry points.
# See docs/development.md. `make`, `make install` (as root), then the test
# targets as an ordinary user (initdb refuses root).

EXTENSION = awa
# The version is awa.control's default_version (one place to move it).
EXTVERSION := $(shell sed -n "s/^default_version *= *'\(.*\)'/\1/p" $(EXTENSION).control)
MODULE_big = awa

# The install script is built from one-concern sources (sql/install/NN_name.sql,
# concatenated in file-name order, as pg_partman does). Upgrade scripts
# (awa--OLD--NEW.sql) are written by hand in sql/updates/ (sql/updates/README.md).
AWA_SCRIPT = $(EXTENSION)--$(EXTVERSION).sql
AWA_SCRIPT_SOURCES = $(sort $(wildcard sql/install/*.sql))
DATA_built = $(AWA_SCRIPT)
DATA = $(wildcard sql/updates/$(EXTENSION)--*--*.sql)

CORE_SRCS = $(wildcard src/core/*.cpp)
PG_SRCS = $(wildcard src/pg/*.cpp)
OBJS = $(patsubst %.cpp,%.o,$(PG_SRCS) $(CORE_SRCS))

PG_CPPFLAGS = -Isrc
PG_CXXFLAGS = -std=c++17 -Wno-register -Wall -Wextra -Wno-unused-parameter -Wno-missing-field-initializers
SHLIB_LINK += -lstdc++

# pg_regress: one file per SQL function family (test/sql/, test/expected/).
REGRESS = setup enqueue enqueue_many job_size claim complete close_cost cursor security heartbeat attempt_end cancel \
          dlq unique queue_admin get_job counts lifecycle_roles maintenance history carry durable periodic metrics metrics_oldest prepare enqueue_at_commit \
          durations concurrency ring_growth rate_limit keys key_limits list_jobs bulk move retry move_retry_records idle_locks \
          ready_row_shape idle_backlog paused_parking claim_generations lane_reclaim
REGRESS_OPTS = --inputdir=test --temp-instance=./tmp_check --temp-config=./test/regress.conf --load-extension=awa

# isolationtester specs (test/specs/, test/expected/).
ISOLATION = reader_idle_after_read open_admin_passed keyed_lane_wide_reserve_gap keyed_lane_after_aborted_move claim_skips_held_rows claim_floor_shared cancel_running_after_claim_prune maintenance_isolation admin_writer_repeatable_read key_metrics_ring_locks counts_untrusted_during_prune bulk_steps_race bulk_cancel_vs_move two_claimers claim_skips_nothing_open rollback_gap stale_completion early_lane_release \
            late_completion dlq_retry_vs_purge cancel_vs_claim two_workers_drain cancel_vs_promote counter_rebuild \
            prune_vs_claim prune_rechecks_after_lock_wait prune_vs_completion completion_vs_rescue prune_vs_rescue prune_vs_inflight_enqueue \
            claim_rollback_across_generations cancel_finished_no_wait carried_attempt_repeatable_read \
            carried_claim_under_prune carried_row_under_prune reader_during_prune periodic_vs_run_maintenance \
            unique_skip_concurrent open_producer_passed oldest_vs_claim counts_untrusted_midway concurrency_limit advance_past_late_enqueue keyed_picks_stuck \
            limit_last_slot rescue_frees_slot rate_limit_races \
            lane_row_update_by_hand wide_reserve_gap_proof lane_create_race open_claim_many_batches \
            keyed_lane_membership key_limit key_limit_set_midway move_vs_claim retry_finished_race paused_enqueue_vs_resume \
            settings_cache_repeatable_read lane_reclaim_race claim_sees_new_lanes_in_transaction
ISOLATION_OPTS = --inputdir=test --temp-instance=./tmp_check_iso --temp-config=./test/regress.conf --load-extension=awa \
                 --outputdir=./output_iso

# TAP tests (PostgreSQL::Test::Cluster).
TAP_TESTS = 1
PROVE_TESTS = test/t/*.pl

PG_CONFIG ?= pg_config
PGXS := $(shell $(PG_CONFIG) --pgxs)
include $(PGXS)

$(AWA_SCRIPT): $(AWA_SCRIPT_SOURCES)
	cat $^ > $@

# CI: the installed script is what the sources make (a stale install or a
# hand edit of the generated file fails here).
installscriptcheck: $(AWA_SCRIPT)
	cat $(AWA_SCRIPT_SOURCES) | cmp - $(AWA_SCRIPT)
	cmp $(AWA_SCRIPT) '$(DESTDIR)$(datadir)/extension/$(AWA_SCRIPT)'
	@echo "install script: ok"

# Header changes rebuild their users: the object compile writes x.d (target x.o).
override CPPFLAGS += -MMD -MP
-include $(OBJS:.o=.d)

# PGXS compiles .cpp to LLVM bitcode with clang, without PG_CXXFLAGS and with
# CPPFLAGS. It must not write dependency files: with -MMD its x.d (target
# x.bc) overwrote the object's, so a header change stopped rebuilding objects
# (stale objects linked into awa.so crashed on a shifted statement enum).
COMPILE.cxx.bc = $(CLANG) -xc++ -Wno-ignored-attributes $(BITCODE_CXXFLAGS) $(filter-out -MMD -MP,$(CPPFLAGS)) \
                 -flto=thin -emit-llvm -c -std=c++17 -Wno-register -Isrc
# ... so a file's bitcode is rebuilt whenever its object is.
$(OBJS:.o=.bc): %.bc: %.o

# Unit tests of the pure C++ core (GoogleTest), no server needed.
UNIT_SRCS = $(wildcard test/unit/*.cpp)
test/unit/awa_unit_tests: $(UNIT_SRCS) $(CORE_SRCS) $(wildcard src/core/*.hpp)
	$(CXX) -std=c++17 -Wall -Wextra -Isrc -o $@ $(UNIT_SRCS) $(CORE_SRCS) -lgtest -lgtest_main -pthread

unit: test/unit/awa_unit_tests
	test/unit/awa_unit_tests

# One target per suite, so scripts/test.sh can count each (run as a non-root user).
regresscheck:
	$(pg_regress_installcheck) $(REGRESS_OPTS) $(REGRESS)

isolationcheck:
	$(pg_isolation_regress_installcheck) $(ISOLATION_OPTS) $(ISOLATION)

tapcheck:
	$(prove_installcheck)

pgtapcheck:
	test/pgtap/run.sh

EXTRA_CLEAN = test/unit/awa_unit_tests src/core/*.d src/pg/*.d src/core/*.bc src/pg/*.bc output_iso tmp_check_iso tmp_pgtap

.PHONY: installscriptcheck unit regresscheck isolationcheck tapcheck pgtapcheck
