package io.vivarium.core.internal;

import java.util.List;

import io.vivarium.api.ApiException;
import io.vivarium.api.Caller;
import io.vivarium.api.CheckpointInfo;
import io.vivarium.api.CheckpointRequest;
import io.vivarium.api.CreateSandboxRequest;
import io.vivarium.api.SandboxInfo;
import io.vivarium.api.SandboxStatus;
import io.vivarium.api.spi.PowerControl;
import io.vivarium.api.spi.SandboxInstance;

/**
 * The machine view of sandboxes ({@code /v1/vms}): the sandboxes whose backend runs machines
 * ({@link io.vivarium.api.spi.SandboxBackend#machine()}), with what only machines do: stop and
 * start through the backend's {@link PowerControl}, each alone on its VM ({@link OperationGate}),
 * and the same checkpoints as every sandbox has ({@link Checkpointing}). Never by a backend's name.
 */
final class Vms {
    private final BackendRegistry registry;
    private final Sandboxes sandboxes;
    private final SandboxLifecycle lifecycle;
    private final LiveInstances live;
    private final Checkpointing checkpointing;

    Vms(BackendRegistry registry, Sandboxes sandboxes, SandboxLifecycle lifecycle, LiveInstances live,
            Checkpointing checkpointing) {
        this.registry = registry;
        this.sandboxes = sandboxes;
        this.lifecycle = lifecycle;
        this.live = live;
        this.checkpointing = checkpointing;
    }

    SandboxInfo create(Caller caller, CreateSandboxRequest request) {
        if (request == null || request.backend() == null || request.backend().isBlank()) {
            throw ApiException.badRequest("backend is required: the VM backend to run it, e.g. {\"backend\": \"qemu\"}");
        }
        BackendRegistry.Entry e = registry.await(request.backend(), live.patience()).orElseThrow(() ->
                ApiException.badRequest("backend " + request.backend() + " is not installed"));
        if (!e.backend().machine()) {
            throw ApiException.badRequest("backend " + e.name() + " runs process sandboxes, not machines; create them "
                    + "with POST /v1/sandboxes");
        }
        return lifecycle.create(caller, request, true);
    }

    List<SandboxInfo> list(Caller caller) {
        return sandboxes.all().stream()
                .filter(sb -> !sb.deleted() && sb.record().tenant().equals(caller.tenant()) && isMachine(sb))
                .map(Sandbox::info)
                .sorted(Sandboxes.ORDER)
                .toList();
    }

    /** The caller's VM: 404 for another tenant's and for a sandbox that is not a machine. */
    Sandbox find(Caller caller, String id) {
        Sandbox sb = sandboxes.find(caller, id);
        if (!isMachine(sb)) {
            throw ApiException.notFound("no VM " + id + " (sandbox " + id + " is a process sandbox: /v1/sandboxes/"
                    + id + ")");
        }
        return sb;
    }

    void delete(Caller caller, String id, boolean force) {
        find(caller, id);
        lifecycle.delete(caller, id, force);
    }

    SandboxInfo stop(Caller caller, String id) {
        Sandbox sb = find(caller, id);
        return sb.gate.exclusive("stop", live.patience(), () -> {
            SandboxInstance running = live.of(sb);
            SandboxInstance stopped = power(sb, "stop").stop(running, checkpointing.context("stopping VM " + id));
            sandboxes.replace(sb, running, stopped, SandboxStatus.STOPPED);
            return sb.info();
        });
    }

    SandboxInfo start(Caller caller, String id) {
        Sandbox sb = find(caller, id);
        return sb.gate.exclusive("start", live.patience(), () -> {
            if (sb.record().status() != SandboxStatus.STOPPED) {
                throw ApiException.conflict("VM " + id + " is " + sb.status().wire() + ", not stopped");
            }
            SandboxInstance stopped = live.ofEvenStopped(sb);
            SandboxInstance started = power(sb, "start").start(stopped, checkpointing.context("starting VM " + id));
            sandboxes.replace(sb, stopped, started, SandboxStatus.RUNNING);
            return sb.info();
        });
    }

    private PowerControl power(Sandbox sb, String what) {
        return registry.of(sb).require(PowerControl.class, what + " its instances");
    }

    CheckpointInfo checkpoint(Caller caller, String id, CheckpointRequest request) {
        String tag = Checkpointing.checkNewTag(request == null ? null : request.tag());
        return checkpointing.create(find(caller, id), tag);
    }

    SandboxInfo restore(Caller caller, String id, CheckpointRequest request) {
        String tag = Checkpointing.checkTag(request == null ? null : request.tag());
        return checkpointing.restore(find(caller, id), tag);
    }

    List<CheckpointInfo> checkpoints(Caller caller, String id) {
        return checkpointing.list(find(caller, id));
    }

    void deleteCheckpoint(Caller caller, String id, String tag) {
        String checked = Checkpointing.checkTag(tag);
        checkpointing.delete(find(caller, id), checked);
    }

    private boolean isMachine(Sandbox sb) {
        Boolean machine = sb.record().machine();
        if (machine != null) {
            return machine;
        }
        return registry.get(sb.record().backend()).map(e -> e.backend().machine()).orElse(false);
    }
}
