package io.vivarium.core.internal;

import io.vivarium.api.Caller;
import io.vivarium.api.SandboxInfo;
import io.vivarium.api.SandboxStatus;
import io.vivarium.api.spi.PauseControl;
import io.vivarium.api.spi.SandboxInstance;

/**
 * Pause, resume and touch through the {@link PauseControl} the sandbox's backend registered (501 if it
 * has none), each alone on its sandbox ({@link OperationGate}: running execs end first). The
 * status is the instance's own ({@link SandboxStatus#PAUSED}), so a backend whose pause outlives the
 * daemon (a QEMU kept stopped) is found paused again by the next one; only a demotion while idle is
 * recorded ({@link Tiers}), and a pause or resume by request clears it.
 */
final class Pausing {
    private final BackendRegistry registry;
    private final Sandboxes sandboxes;
    private final LiveInstances live;
    private final Tiers tiers;

    Pausing(BackendRegistry registry, Sandboxes sandboxes, LiveInstances live, Tiers tiers) {
        this.tiers = tiers;
        this.registry = registry;
        this.sandboxes = sandboxes;
        this.live = live;
    }

    SandboxInfo pause(Caller caller, String id) {
        Sandbox sb = sandboxes.find(caller, id);
        return sb.gate.exclusive("pause", live.patience(), () -> {
            SandboxInstance instance = tiers.warmedUp(sb, live.ofEvenPaused(sb));
            if (instance.status() != SandboxStatus.PAUSED) {
                pauseControl(sb).pause(instance);
            }
            tiers.settled(sb);
            return sb.info();
        });
    }

    SandboxInfo resume(Caller caller, String id) {
        Sandbox sb = sandboxes.find(caller, id);
        return sb.gate.exclusive("resume", live.patience(), () -> {
            SandboxInstance instance = tiers.warmedUp(sb, live.ofEvenPaused(sb));
            if (instance.status() == SandboxStatus.PAUSED) {
                pauseControl(sb).resume(instance);
            }
            tiers.settled(sb);
            return sb.info();
        });
    }

    /** {@code POST .../touch}, in any status: activity that promotes a paused sandbox to hot, whatever paused it. */
    SandboxInfo touch(Caller caller, String id) {
        Sandbox sb = sandboxes.find(caller, id);
        if (sb.status() != SandboxStatus.PAUSED) {
            tiers.active(sb);
            return sb.info();
        }
        return sb.gate.exclusive("touch", live.patience(), () -> {
            tiers.touch(sb, live.ofEvenPaused(sb));
            return sb.info();
        });
    }

    private PauseControl pauseControl(Sandbox sb) {
        return registry.of(sb).require(PauseControl.class, "pause its sandboxes");
    }
}
