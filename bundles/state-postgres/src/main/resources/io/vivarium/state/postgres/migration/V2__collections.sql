-- The collections a daemon stores and where the file store keeps their records, so that
-- `vivarium state export` can write a node's rows back as files (and remove files of records
-- deleted since) without knowing the daemon's version.
CREATE TABLE vivarium_collections (
    name    text    PRIMARY KEY,
    schema  integer NOT NULL,
    layout  text    NOT NULL
);
