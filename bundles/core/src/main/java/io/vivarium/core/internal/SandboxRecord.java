package io.vivarium.core.internal;

import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;

import io.vivarium.api.IdlePolicy;
import io.vivarium.api.NetworkPolicy;
import io.vivarium.api.SandboxStatus;
import io.vivarium.api.VolumeMount;
import io.vivarium.api.spi.InstanceState;

/**
 * What core persists about a sandbox ({@code sandboxes/<id>/sandbox.json}).
 *
 * @param pidsLimit the pids limit asked for at create, or null for the backend's default
 * @param diskLimitMib the workspace size asked for at create, or null for the backend's default
 * @param phase {@code creating} until the backend has answered, then {@code created}; a record
 *        still {@code creating} at start-up belongs to a create the daemon did not finish
 * @param machine whether its backend runs machines ({@code SandboxBackend.machine()}), so that it is a VM
 *        under {@code /v1/vms}; null in records written before it was recorded
 * @param snapshotTag the tag a forked child was made from ({@code image} holds it too), else null;
 *        null in children recorded before 2026-12-01 (a branch of one then has no {@code parent_tag})
 * @param network its network policy (null in a record written before networks: loopback only)
 * @param resolver the DNS resolver its network was given at create, or null
 * @param ports its exposed ports, each with the random nonce its signed tokens are bound to (a port
 *        closed and exposed again refuses the old ones); null for none
 * @param volumes the volumes mounted in it, in the order their binds are numbered
 *        ({@link SandboxDirs#volumesOf}); null for none
 * @param idle when it is demoted while idle, or null for never
 * @param demoted the tier it was demoted to while idle ({@code warm}), which a request that needs its
 *        guest promotes it from; null while it was not (a sandbox paused by a request stays paused)
 * @param volumeDisks true when its backend attaches its volumes as disks of its own
 *        ({@code volume_disks}), so that it takes each alone; null otherwise
 * @param template the operator's template it was made from, or null
 * @param root the root file system it runs on, from its template's image (with the template's
 *        env, workdir and user over the image's), or null for its backend's own
 */
record SandboxRecord(String id, String tenant, String backend, long createdAtUnix, Integer memoryLimitMib,
        Integer vcpus, String image, Integer pidsLimit, Integer diskLimitMib, String phase, InstanceState state, SandboxStatus status, String reason,
        Boolean machine, String snapshotTag, NetworkPolicy network, String resolver,
        Map<Integer, String> ports, List<VolumeMount> volumes, IdlePolicy idle, String demoted, Boolean volumeDisks,
        String template, TemplateRoot root) {

    static final String CREATING = "creating";
    static final String CREATED = "created";

    SandboxRecord created(InstanceState newState) {
        return new SandboxRecord(id, tenant, backend, createdAtUnix, memoryLimitMib, vcpus, image, pidsLimit, diskLimitMib, CREATED, newState,
                SandboxStatus.RUNNING, null, machine, snapshotTag, network, resolver, ports, volumes, idle, demoted, volumeDisks, template, root);
    }

    /** This record with the state and status after a restore, stop or start. */
    SandboxRecord with(InstanceState newState, SandboxStatus newStatus) {
        return new SandboxRecord(id, tenant, backend, createdAtUnix, memoryLimitMib, vcpus, image, pidsLimit, diskLimitMib, phase, newState,
                newStatus, null, machine, snapshotTag, network, resolver, ports, volumes, idle, demoted, volumeDisks, template, root);
    }

    /** This record with {@code newPorts} exposed (none when empty). */
    SandboxRecord withPorts(Map<Integer, String> newPorts) {
        return new SandboxRecord(id, tenant, backend, createdAtUnix, memoryLimitMib, vcpus, image, pidsLimit, diskLimitMib, phase, state,
                status, reason, machine, snapshotTag, network, resolver, newPorts.isEmpty() ? null : new TreeMap<>(newPorts), volumes, idle, demoted, volumeDisks, template, root);
    }

    /** This record demoted to {@code tier} while idle, or promoted ({@code null}). */
    SandboxRecord withDemoted(String tier) {
        return new SandboxRecord(id, tenant, backend, createdAtUnix, memoryLimitMib, vcpus, image, pidsLimit, diskLimitMib, phase, state,
                status, reason, machine, snapshotTag, network, resolver, ports, volumes, idle, tier, volumeDisks, template, root);
    }

    /** The volumes mounted in it (none in a record written before volumes). */
    List<VolumeMount> mounts() {
        return volumes == null ? List.of() : volumes;
    }

    /** Whether its volumes are disks of its instance, which it takes alone ({@link Volumes}). */
    boolean mountsVolumeDisks() {
        return Boolean.TRUE.equals(volumeDisks);
    }

    /** The first volume it may write, if any: what a dry-run, checkpoint or branch could not put back. */
    Optional<VolumeMount> writableVolume() {
        return mounts().stream().filter(m -> !m.readOnly()).findFirst();
    }

    /** Its exposed ports (port to nonce), lowest first. */
    Map<Integer, String> exposedPorts() {
        return ports == null ? new TreeMap<>() : new TreeMap<>(ports);
    }

    SandboxRecord failed(String why) {
        return new SandboxRecord(id, tenant, backend, createdAtUnix, memoryLimitMib, vcpus, image, pidsLimit, diskLimitMib, phase, state,
                SandboxStatus.FAILED, why, machine, snapshotTag, network, resolver, ports, volumes, idle, demoted, volumeDisks, template, root);
    }
}
