-- Every record of every node: one row, keyed by the node that owns it, its collection and its key.
-- The revision is the compare-and-set counter; the body is the record's JSON; file is where the file
-- store keeps it (relative to a state directory), so `vivarium state export` can write it back.
CREATE TABLE vivarium_records (
    node        text        NOT NULL,
    collection  text        NOT NULL,
    key         text        NOT NULL,
    schema      integer     NOT NULL CHECK (schema >= 0),
    revision    bigint      NOT NULL CHECK (revision > 0),
    body        jsonb       NOT NULL,
    file        text        NOT NULL,
    updated_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (node, collection, key)
);

-- A node's first start on PostgreSQL: what it imported from its state directory (perhaps nothing).
CREATE TABLE vivarium_imports (
    node        text        PRIMARY KEY,
    source      text        NOT NULL,
    records     integer     NOT NULL,
    imported_at timestamptz NOT NULL DEFAULT now()
);
