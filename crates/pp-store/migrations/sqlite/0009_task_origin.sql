-- Which schedule, webhook channel or MCP client started a task (its name), beside
-- `created_by` (the kind of actor). NULL for tasks started by a person.
ALTER TABLE tasks ADD COLUMN origin TEXT;
