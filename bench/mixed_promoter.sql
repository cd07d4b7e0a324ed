-- bench/mixed.sh promoter (pgbench -c 1): moves due retries into the ready ring every 100 ms.
SELECT awa.promote_due();
\sleep 100 ms
