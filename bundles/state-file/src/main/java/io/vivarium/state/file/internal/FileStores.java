package io.vivarium.state.file.internal;

import java.io.IOException;
import java.nio.file.Path;
import java.util.List;

import io.vivarium.api.state.RecordCollection;
import io.vivarium.api.state.StateStore;
import io.vivarium.api.state.StateStoreProvider;
import io.vivarium.api.state.StoreEvents;
import io.vivarium.common.state.FileStateStore;
import io.vivarium.common.state.StoreOffer;

import org.osgi.framework.BundleContext;
import org.osgi.service.component.annotations.Activate;
import org.osgi.service.component.annotations.Component;
import org.osgi.service.component.annotations.Deactivate;

/**
 * The embedded store: records as files in the state directory ({@link FileStateStore}). Offered to
 * core when the operator chose no other store ({@link StateStoreProvider#CHOICE} unset or
 * {@value #NAME}).
 */
@Component(immediate = true, service = {})
public final class FileStores implements StateStoreProvider {
    static final String NAME = "file";

    private final StoreOffer offer = new StoreOffer();

    @Activate
    void activate(BundleContext ctx) {
        if (StoreOffer.chosen(ctx, NAME, true)) {
            offer.offer(ctx, NAME, this);
        }
    }

    @Deactivate
    void deactivate() {
        offer.withdraw();
    }

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
