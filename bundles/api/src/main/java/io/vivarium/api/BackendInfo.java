package io.vivarium.api;

import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * One entry of {@code GET /v1/backends}.
 *
 * @param name backend name ({@code vivarium.backend} service property)
 * @param bundle symbolic name of the bundle providing it
 * @param version that bundle's version
 * @param capabilities what the backend can do on this host, sorted: the {@link Capability} names it
 *        reports and those core derives from what it implements; since 2.0 a list of names
 * @param machine whether its instances are machines (VMs with virtual CPUs), which {@code /v1/vms}
 *        shows; since 2.0
 * @param available whether it can create sandboxes on this host now
 * @param reason why not, when unavailable; when available, what runs degraded on this host (null when nothing)
 * @param sandboxes how many sandboxes it runs
 * @param details what a person needs to know about how it runs here: accelerator chosen and why,
 *        platform, agent kind, isolation ({@link io.vivarium.api.spi.SandboxBackend#details()});
 *        empty when the backend says nothing
 * @param clientMayName whether a client may name it at create without a template (the operator's
 *        {@code client_backends}); null where it is not said; since 2.10
 */
public record BackendInfo(String name, String bundle, String version, List<String> capabilities, boolean machine,
        boolean available, String reason, int sandboxes, Map<String, String> details, Boolean clientMayName) {

    /** The entry of API 2.9 (not saying whether clients may name it). */
    public BackendInfo(String name, String bundle, String version, List<String> capabilities, boolean machine,
            boolean available, String reason, int sandboxes, Map<String, String> details) {
        this(name, bundle, version, capabilities, machine, available, reason, sandboxes, details, null);
    }

    public BackendInfo {
        capabilities = capabilities == null ? List.of() : List.copyOf(capabilities);
        details = details == null ? Map.of() : Collections.unmodifiableMap(new LinkedHashMap<>(details));
    }

    /** Whether the backend has the capability {@code name} ({@link Capability}). */
    public boolean can(String name) {
        return capabilities.contains(name);
    }
}
