-- A new database with awa is served by the maintenance worker at once.
SELECT awa._wake_launcher();

