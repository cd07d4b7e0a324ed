-- One job claimed and completed in one transaction (bench/open_claim.sh).
SELECT awa.complete(job_id, run_lease, receipt_id) FROM awa.claim('default', 1);
