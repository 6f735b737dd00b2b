-- Durable cancel requests (issue 28, item 3): a process that leaves a running task at
-- once after the person asked to cancel it (a second Ctrl+C in `run`) records the request
-- on the task and clears its heartbeat; such a task gets no more heartbeats, and recovery
-- (`interrupt_stale`) ends it `cancelled` instead of `interrupted`. Any state change of the
-- task clears the request (it has been settled one way or another).
ALTER TABLE tasks ADD COLUMN cancel_requested_at INTEGER;
ALTER TABLE tasks ADD COLUMN cancel_requested_by TEXT;
