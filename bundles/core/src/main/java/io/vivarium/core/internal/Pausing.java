package io.vivarium.core.internal;

import io.vivarium.api.ApiException;
import io.vivarium.api.Caller;
import io.vivarium.api.SandboxInfo;
import io.vivarium.api.SandboxStatus;
import io.vivarium.api.spi.PauseControl;
import io.vivarium.api.spi.SandboxInstance;

/**
 * Pause and resume through the {@link PauseControl} the sandbox's backend registered (501 if it
 * has none), each alone on its sandbox ({@link OperationGate}: running execs end first). The
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
                pauseControl(sb).pause(instance);
            }
            return sb.info();
        });
    }

    SandboxInfo resume(Caller caller, String id) {
        Sandbox sb = sandboxes.find(caller, id);
        return sb.gate.exclusive("resume", live.patience(), () -> {
            SandboxInstance instance = live.ofEvenPaused(sb);
            if (instance.status() == SandboxStatus.PAUSED) {
                pauseControl(sb).resume(instance);
            }
            return sb.info();
        });
    }

    private PauseControl pauseControl(Sandbox sb) {
        return registry.of(sb).require(PauseControl.class, "pause its sandboxes");
    }
}
