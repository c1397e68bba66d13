package io.vivarium.core.internal;

import java.util.List;

import io.vivarium.api.state.RecordCollection;

/** The collections of core's {@link io.vivarium.api.state.StateStore}; a new one is a constant here. */
final class StateCollections {
    static final String RECORD = "sandbox.json";

    static final RecordCollection<SandboxRecord> SANDBOXES = RecordCollection.of("sandboxes", SandboxRecord.class,
            "sandboxes/{key}/" + RECORD);
    /** VM dry-runs in progress, by sandbox id. */
    static final RecordCollection<DryRunIntents.Intent> DRY_RUNS = RecordCollection.of("dry-runs",
            DryRunIntents.Intent.class, "sandboxes/{key}/" + DryRunIntents.FILE);

    /** Snapshot records by {@link SnapshotTags#key}; their images stay in {@code snapshots/<tenant>/<tag>/} (SnapshotImages). */
    static final RecordCollection<SnapshotRecord> SNAPSHOTS = RecordCollection.of("snapshots", SnapshotRecord.class,
            "snapshot-records/{key}.json");

    /** Volume records by {@link Volumes#key}; their file systems stay in {@code volumes/<key>.ext4}. */
    static final RecordCollection<VolumeRecord> VOLUMES = RecordCollection.of("volumes", VolumeRecord.class,
            "volume-records/{key}.json");

    /** Template records by name (daemon-wide); their images stay unpacked where the images bundle keeps them. */
    static final RecordCollection<TemplateRecord> TEMPLATES = RecordCollection.of("templates", TemplateRecord.class,
            "template-records/{key}.json");

    static final List<RecordCollection<?>> ALL = List.of(SANDBOXES, DRY_RUNS, SNAPSHOTS, VOLUMES, TEMPLATES);

    private StateCollections() {
    }
}
