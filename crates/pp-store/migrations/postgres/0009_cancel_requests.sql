-- Durable cancel requests, as SQLite's 0018: a process that leaves a running task at once
-- after the person asked to cancel it records the request and clears the heartbeat;
-- recovery then ends the task `cancelled` instead of `interrupted`. Any state change of
-- the task clears the request.
ALTER TABLE tasks ADD COLUMN cancel_requested_at BIGINT;
ALTER TABLE tasks ADD COLUMN cancel_requested_by TEXT;
