package io.vivarium.api.spi;

import java.nio.file.Path;
import java.util.List;

import io.vivarium.api.NetworkPolicy;

/**
 * What core asks a backend to create. A null limit means the backend's own default; a backend
 * that cannot enforce a limit it was given throws {@link io.vivarium.api.ApiException} 501 from
 * {@link SandboxBackend#create} rather than create an instance without it.
 *
 * @param id the sandbox id core chose (lower-case letters, digits and dashes)
 * @param dir a private directory for this instance's files (workspace, sockets, logs); it lives
 *        beside core's record and is removed by core after {@link SandboxBackend#destroy}
 * @param memoryLimitMib memory limit, or null for none
 * @param vcpus virtual CPUs, or null for the backend's default; only set for a backend whose
 *        {@link SandboxBackend#machine()} is true; since 1.2
 * @param image image or template name, or null for the backend's default; only set for a backend
 *        that reports {@link io.vivarium.api.Capability#IMAGE}; since 1.2
 * @param pidsLimit most processes and threads the instance may have at once, or null for the
 *        default; since 1.2
 * @param diskLimitMib size of the instance's workspace in MiB, or null for the default; since 1.2
 * @param network the instance's network, already within the operator's policy; an {@code egress}
 *        one only for a backend that reports {@link io.vivarium.api.Capability#NETWORK_EGRESS};
 *        since 2.7
 * @param resolver the DNS resolver (an IPv4 address) an {@code egress} instance resolves names
 *        through, or null for none; since 2.7
 * @param volumes the volumes to mount; only for a backend that reports
 *        {@link io.vivarium.api.Capability#VOLUMES}, else empty; since 2.9
 * @param root the root file system it starts on (a template's image), or null for the backend's
 *        own; only for a backend that reports {@link io.vivarium.api.Capability#ROOT_IMAGE}; since 2.12
 */
public record InstanceSpec(String id, Path dir, Integer memoryLimitMib, Integer vcpus, String image,
        Integer pidsLimit, Integer diskLimitMib, NetworkPolicy network, String resolver, List<AttachedVolume> volumes,
        RootImage root) {

    public InstanceSpec {
        network = network == null ? NetworkPolicy.ISOLATED : network;
        volumes = volumes == null ? List.of() : List.copyOf(volumes);
    }

    /** The spec of SPI 2.9 (no root image). */
    public InstanceSpec(String id, Path dir, Integer memoryLimitMib, Integer vcpus, String image, Integer pidsLimit,
            Integer diskLimitMib, NetworkPolicy network, String resolver, List<AttachedVolume> volumes) {
        this(id, dir, memoryLimitMib, vcpus, image, pidsLimit, diskLimitMib, network, resolver, volumes, null);
    }

    /** The spec of SPI 2.8 (no volumes). */
    public InstanceSpec(String id, Path dir, Integer memoryLimitMib, Integer vcpus, String image, Integer pidsLimit,
            Integer diskLimitMib, NetworkPolicy network, String resolver) {
        this(id, dir, memoryLimitMib, vcpus, image, pidsLimit, diskLimitMib, network, resolver, null);
    }

    /** The spec of SPI 2.6 (loopback only). */
    public InstanceSpec(String id, Path dir, Integer memoryLimitMib, Integer vcpus, String image, Integer pidsLimit,
            Integer diskLimitMib) {
        this(id, dir, memoryLimitMib, vcpus, image, pidsLimit, diskLimitMib, null, null, null);
    }

    /** The spec of SPI 1.1 (no vcpus, image or pids and disk limits). */
    public InstanceSpec(String id, Path dir, Integer memoryLimitMib) {
        this(id, dir, memoryLimitMib, null, null, null, null, null, null, null);
    }
}
