package io.vivarium.api.spi;

import java.util.Map;

/**
 * What a backend needs to find a running instance again after the daemon (or the backend bundle)
 * restarts: pids with their start times, control sockets, paths. Core persists it atomically in the
 * sandbox record and hands it back to {@link SandboxBackend#adopt}. Keys and values are the
 * backend's own; keep them small and plain.
 *
 * @param pid host pid of the instance's main process, shown to operators
 * @param data backend-private fields
 */
public record InstanceState(long pid, Map<String, String> data) {
    public InstanceState {
        data = Map.copyOf(data);
    }
}
