package io.vivarium.core.internal;

import java.util.List;

import io.vivarium.api.ApiException;
import io.vivarium.api.Caller;
import io.vivarium.api.CheckpointInfo;
import io.vivarium.api.CheckpointRequest;
import io.vivarium.api.CreateSandboxRequest;
import io.vivarium.api.SandboxInfo;
import io.vivarium.api.SandboxStatus;
import io.vivarium.api.spi.Checkpoints;
import io.vivarium.api.spi.PowerControl;
import io.vivarium.api.spi.SandboxInstance;

/**
 * The machine view of sandboxes ({@code /v1/vms}): the sandboxes whose backend runs machines, with
 * what only machines do: stop, start, snapshot and restore, each alone on its VM
 * ({@link OperationGate}). Capabilities are found on the instance ({@link Checkpoints},
 * {@link PowerControl}), never from a backend's name.
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
        if (!e.backend().capabilities().vcpus()) {
            throw ApiException.badRequest("backend " + e.name() + " runs process sandboxes, not machines; create them "
                    + "with POST /v1/sandboxes");
        }
        return lifecycle.create(caller, request);
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

    void delete(Caller caller, String id) {
        find(caller, id);
        lifecycle.delete(caller, id);
    }

    SandboxInfo stop(Caller caller, String id) {
        Sandbox sb = find(caller, id);
        return sb.gate.exclusive("stop", live.patience(), () -> {
            SandboxInstance running = live.of(sb);
            if (!(running instanceof PowerControl power)) {
                throw ApiException.notImplemented("backend " + sb.record().backend() + " cannot stop its instances");
            }
            SandboxInstance stopped = power.stop(checkpointing.context("stopping VM " + id));
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
            SandboxInstance stopped = attached(sb);
            if (!(stopped instanceof PowerControl power)) {
                throw ApiException.notImplemented("backend " + sb.record().backend() + " cannot start its instances");
            }
            SandboxInstance started = power.start(checkpointing.context("starting VM " + id));
            sandboxes.replace(sb, stopped, started, SandboxStatus.RUNNING);
            return sb.info();
        });
    }

    CheckpointInfo snapshot(Caller caller, String id, CheckpointRequest request) {
        String tag = Checkpointing.checkTag(request == null ? null : request.tag());
        Sandbox sb = find(caller, id);
        return sb.gate.exclusive("checkpoint", live.patience(), () -> {
            SandboxInstance instance = live.of(sb);
            return checkpointing.create(sb, Checkpointing.of(sb, instance), tag);
        });
    }

    SandboxInfo restore(Caller caller, String id, CheckpointRequest request) {
        String tag = Checkpointing.checkTag(request == null ? null : request.tag());
        Sandbox sb = find(caller, id);
        return sb.gate.exclusive("restore", live.patience(), () -> {
            SandboxInstance instance = attached(sb);
            Checkpoints c = Checkpointing.of(sb, instance);
            if (!checkpointing.exists(c, tag)) {
                throw ApiException.notFound("VM " + id + " has no checkpoint " + tag);
            }
            checkpointing.restore(sb, instance, c, tag);
            return sb.info();
        });
    }

    /** The VM's instance, running or stopped (a stopped VM is restored or started from it). */
    private SandboxInstance attached(Sandbox sb) {
        SandboxInstance i = sb.instance();
        if (sb.record().status() == SandboxStatus.STOPPED && i != null) {
            return i;
        }
        if (sb.record().status() == SandboxStatus.STOPPED) {
            throw ApiException.unavailable("backend " + sb.record().backend() + " of VM " + sb.record().id()
                    + " is not available right now; retry shortly", 2);
        }
        return live.of(sb);
    }

    private boolean isMachine(Sandbox sb) {
        Boolean machine = sb.record().machine();
        if (machine != null) {
            return machine;
        }
        return registry.get(sb.record().backend()).map(e -> e.backend().capabilities().vcpus()).orElse(false);
    }
}
