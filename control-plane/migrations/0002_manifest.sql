-- The route manifest's version: bumped at every compile, so versions only grow, across
-- restarts and across control planes sharing one database.
CREATE TABLE manifest_state (
    id      BIGINT PRIMARY KEY,
    version BIGINT NOT NULL
);
INSERT INTO manifest_state (id, version) VALUES (1, 0);
