package io.vivarium.core.internal;

import java.io.IOException;
import java.nio.file.Path;
import java.util.List;

import io.vivarium.api.state.RecordCollection;
import io.vivarium.api.state.StateStore;
import io.vivarium.api.state.StateStoreProvider;
import io.vivarium.api.state.StoreEvents;
import io.vivarium.common.state.FileStateStore;

/** The embedded file store, as the state-file bundle offers it to core at run time. */
final class FileStores implements StateStoreProvider {
    static final FileStores INSTANCE = new FileStores();

    @Override
    public StateStore open(Path stateDir, String node, List<RecordCollection<?>> collections, StoreEvents events)
            throws IOException {
        return FileStateStore.open(stateDir, node, collections, events);
    }

    @Override
    public String describe(Path stateDir) {
        return "files under " + stateDir;
    }
}
