-- Per-API analytics as gateways report them: one row per gateway process (`boot`),
-- Unix minute, API and application (empty: none), holding that process's totals for it.
-- A report replaces a row's counts only with larger ones, so a report sent twice, or late,
-- never counts twice. `bucket_N` counts latencies in the Nth bucket of
-- apim_manifest::analytics::LATENCY_BOUNDS_US (bucket_16: slower than the last bound).
-- Rows older than the retention are deleted (docs/operations.md#per-api-analytics).
CREATE TABLE analytics_minutes (
    gateway        TEXT NOT NULL,
    boot           TEXT NOT NULL,
    minute         BIGINT NOT NULL,
    api_id         TEXT NOT NULL,
    application_id TEXT NOT NULL,
    requests       BIGINT NOT NULL,
    client_errors  BIGINT NOT NULL,
    server_errors  BIGINT NOT NULL,
    latency_sum_us BIGINT NOT NULL,
    bucket_0  BIGINT NOT NULL,
    bucket_1  BIGINT NOT NULL,
    bucket_2  BIGINT NOT NULL,
    bucket_3  BIGINT NOT NULL,
    bucket_4  BIGINT NOT NULL,
    bucket_5  BIGINT NOT NULL,
    bucket_6  BIGINT NOT NULL,
    bucket_7  BIGINT NOT NULL,
    bucket_8  BIGINT NOT NULL,
    bucket_9  BIGINT NOT NULL,
    bucket_10 BIGINT NOT NULL,
    bucket_11 BIGINT NOT NULL,
    bucket_12 BIGINT NOT NULL,
    bucket_13 BIGINT NOT NULL,
    bucket_14 BIGINT NOT NULL,
    bucket_15 BIGINT NOT NULL,
    bucket_16 BIGINT NOT NULL,
    PRIMARY KEY (gateway, boot, minute, api_id, application_id)
);
CREATE INDEX analytics_minutes_api ON analytics_minutes (api_id, minute);
CREATE INDEX analytics_minutes_minute ON analytics_minutes (minute);
