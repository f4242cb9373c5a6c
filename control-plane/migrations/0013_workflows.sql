-- Approval workflows (WSO2's workflow extensions): which requests of a tenant wait for
-- an approval, and the requests waiting or decided. No row in workflow_settings: nothing
-- waits (WSO2's default executors approve at once).
CREATE TABLE workflow_settings (
    tenant                    TEXT PRIMARY KEY,
    application_creation      BIGINT NOT NULL,  -- 0 or 1
    subscription_creation     BIGINT NOT NULL,  -- 0 or 1
    production_key_generation BIGINT NOT NULL,  -- 0 or 1
    sandbox_key_generation    BIGINT NOT NULL   -- 0 or 1
);

-- One request that waits for (or got) an approval, by its reference (WSO2's
-- workflowReferenceId). `kind` is WSO2's workflow type (AM_APPLICATION_CREATION,
-- AM_SUBSCRIPTION_CREATION, AM_APPLICATION_REGISTRATION_PRODUCTION or _SANDBOX);
-- `subject` the application or subscription it is about; `payload` what a key request
-- asked for (JSON), applied once approved.
CREATE TABLE workflows (
    reference_id TEXT PRIMARY KEY,
    tenant       TEXT NOT NULL,
    kind         TEXT NOT NULL,
    subject      TEXT NOT NULL,
    status       TEXT NOT NULL,                 -- CREATED, APPROVED or REJECTED
    payload      TEXT NOT NULL,
    description  TEXT NOT NULL,
    created_at   BIGINT NOT NULL,
    completed_at BIGINT
);
CREATE INDEX workflows_subject ON workflows (subject, kind);
-- At most one request of a kind waits on a subject (two racing key requests: one waits).
CREATE UNIQUE INDEX workflows_waiting ON workflows (subject, kind) WHERE status = 'CREATED';
