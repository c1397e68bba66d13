package io.vivarium.api.state;

import java.io.IOException;
import java.nio.file.Path;
import java.util.List;

import org.osgi.annotation.versioning.ProviderType;

/**
 * Opens the {@link StateStore} of one node. Registered as an OSGi service by a store bundle
 * ({@code state-file}, the embedded default; {@code state-postgres}) with {@link #NAME} set, and
 * only by the store the operator chose: core takes the one provider there is.
 */
@ProviderType
public interface StateStoreProvider {
    /** The service property naming the store, e.g. {@code file} or {@code postgres}. */
    String NAME = "vivarium.state";

    /**
     * The framework property naming the chosen store (the launcher sets it from the features it
     * starts); absent means {@code file}.
     */
    String CHOICE = "vivarium.state.store";

    /**
     * Opens the store of {@code node}: replays or rolls back what a crash left half done, then loads
     * the node's records of {@code collections}.
     *
     * @param stateDir the daemon's state directory (sandbox directories, images, this node's id)
     * @param node this host's id, stable across restarts
     * @param events told of commits and of the store's health
     * @throws IOException if the store cannot be opened; the message tells the operator what to fix
     */
    StateStore open(Path stateDir, String node, List<RecordCollection<?>> collections, StoreEvents events)
            throws IOException;

    /** Where the records are, for people: a directory, or a database URL without its password. */
    String describe(Path stateDir);
}
