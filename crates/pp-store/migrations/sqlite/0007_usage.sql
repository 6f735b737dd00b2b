-- Token accounting (issue 14): one row per model call, written in the same transaction
-- as the `assistant_message` event that carries the call's usage. A task's usage is the
-- sum of its rows (`TASK_COLUMNS` adds it up).
--
-- `model`: the model's display name (`openai-compatible:gpt-4o-mini`, `scripted`).
-- `reported`: 1 when the provider reported usage; 0 counts the call with zero tokens.
-- `prompt_tokens` includes `cached_tokens`; `completion_tokens` includes
-- `reasoning_tokens` (the OpenAI meaning; Anthropic's figures are normalised to it).
-- `cost`/`currency`: the estimate from `[model] prices` when the call was recorded
-- (NULL: no price for the model), so changing the prices later never rewrites history.

CREATE TABLE model_calls (
    id                INTEGER PRIMARY KEY,
    task_id           TEXT NOT NULL REFERENCES tasks (id),
    step              INTEGER NOT NULL CHECK (step >= 0),
    model             TEXT NOT NULL,
    reported          INTEGER NOT NULL CHECK (reported IN (0, 1)),
    prompt_tokens     INTEGER NOT NULL CHECK (prompt_tokens >= 0),
    completion_tokens INTEGER NOT NULL CHECK (completion_tokens >= 0),
    cached_tokens     INTEGER NOT NULL CHECK (cached_tokens >= 0),
    reasoning_tokens  INTEGER NOT NULL CHECK (reasoning_tokens >= 0),
    cost              REAL CHECK (cost >= 0),
    currency          TEXT CHECK ((cost IS NULL) = (currency IS NULL)),
    at                INTEGER NOT NULL
);

CREATE INDEX model_calls_by_task ON model_calls (task_id);
