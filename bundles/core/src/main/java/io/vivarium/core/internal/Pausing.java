package io.vivarium.core.internal;

import io.vivarium.api.ApiException;
import io.vivarium.api.Caller;
import io.vivarium.api.SandboxInfo;
import io.vivarium.api.SandboxStatus;
import io.vivarium.api.spi.SandboxBackend;
import io.vivarium.api.spi.SandboxInstance;

/**
 * Pause and resume through the backend's {@link SandboxBackend#pause}/{@link SandboxBackend#resume}
 * (501 by default), each alone on its sandbox ({@link OperationGate}: running execs end first). The
 * status is the instance's own ({@link SandboxStatus#PAUSED}), so a backend whose pause outlives the
 * daemon (a QEMU kept stopped) is found paused again by the next one; nothing is persisted.
 */
final class Pausing {
    private final BackendRegistry registry;
    private final Sandboxes sandboxes;
    private final LiveInstances live;

    Pausing(BackendRegistry registry, Sandboxes sandboxes, LiveInstances live) {
        this.registry = registry;
        this.sandboxes = sandboxes;
        this.live = live;
    }

    SandboxInfo pause(Caller caller, String id) {
        Sandbox sb = sandboxes.find(caller, id);
        return sb.gate.exclusive("pause", live.patience(), () -> {
            SandboxInstance instance = live.ofEvenPaused(sb);
            if (instance.status() != SandboxStatus.PAUSED) {
                backendOf(sb).pause(instance);
            }
            return sb.info();
        });
    }

    SandboxInfo resume(Caller caller, String id) {
        Sandbox sb = sandboxes.find(caller, id);
        return sb.gate.exclusive("resume", live.patience(), () -> {
            SandboxInstance instance = live.ofEvenPaused(sb);
            if (instance.status() == SandboxStatus.PAUSED) {
                backendOf(sb).resume(instance);
            }
            return sb.info();
        });
    }

    private SandboxBackend backendOf(Sandbox sb) {
        return registry.get(sb.record().backend()).map(BackendRegistry.Entry::backend).orElseThrow(() ->
                ApiException.unavailable("backend " + sb.record().backend() + " of sandbox " + sb.record().id()
                        + " is not available right now; retry shortly", 2));
    }
}
