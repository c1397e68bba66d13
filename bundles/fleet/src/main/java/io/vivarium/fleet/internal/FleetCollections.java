package io.vivarium.fleet.internal;

import java.util.List;

import io.vivarium.api.state.RecordCollection;

/** The master's records, in a store of their own (the state directory's {@code fleet/}, or its rows in PostgreSQL). */
final class FleetCollections {
    static final RecordCollection<NodeRecord> NODES = RecordCollection.of("fleet-nodes", NodeRecord.class, "nodes/{key}.json");
    static final RecordCollection<Placement> PLACEMENTS =
            RecordCollection.of("fleet-placements", Placement.class, "placements/{key}.json");
    static final RecordCollection<TagPlacement> TAGS = RecordCollection.of("fleet-tags", TagPlacement.class, "tags/{key}.json");
    static final RecordCollection<Registrations.Registration> REGISTRATIONS =
            RecordCollection.of("fleet-registrations", Registrations.Registration.class, "registrations/{key}.json");
    static final List<RecordCollection<?>> ALL = List.of(NODES, PLACEMENTS, TAGS, REGISTRATIONS);

    private FleetCollections() {
    }
}
