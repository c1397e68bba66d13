package io.vivarium.core.internal;

import java.util.regex.Pattern;

import java.util.List;

import io.vivarium.api.ApiException;
import io.vivarium.api.Capability;
import io.vivarium.api.CreateSandboxRequest;

/** Checks a create request against the chosen backend's capabilities, once, before anything is made. */
final class CreateRequests {
    static final int MIN_MEMORY_MIB = 16;
    static final int MAX_MEMORY_MIB = 1 << 20;
    static final int MAX_VCPUS = 256;
    /** A sandbox needs a few processes of its own (init, keep-alive, the exec's entry) before any command runs. */
    static final int MIN_PIDS_LIMIT = 16;
    static final int MAX_PIDS_LIMIT = 1 << 22;
    static final int MIN_DISK_LIMIT_MIB = 16;
    static final int MAX_DISK_LIMIT_MIB = 1 << 24;
    /** An image or template name: a plain name, never a path. */
    static final Pattern IMAGE_NAME = Pattern.compile("[A-Za-z0-9][A-Za-z0-9._-]{0,127}");

    private CreateRequests() {
    }

    static void check(CreateSandboxRequest req, String backend, List<String> caps) {
        Integer mem = req.memoryLimitMib();
        if (mem != null) {
            if (mem < MIN_MEMORY_MIB || mem > MAX_MEMORY_MIB) {
                throw ApiException.badRequest("memory_limit_mib must be between " + MIN_MEMORY_MIB + " and "
                        + MAX_MEMORY_MIB + ", got " + mem);
            }
            if (!caps.contains(Capability.MEMORY_LIMIT)) {
                throw ApiException.badRequest("memory_limit_mib is not supported by backend " + backend
                        + " on this host (no writable memory cgroup); omit it to create the sandbox without a limit");
            }
        }
        limit("pids_limit", req.pidsLimit(), MIN_PIDS_LIMIT, MAX_PIDS_LIMIT, caps.contains(Capability.PIDS_LIMIT), backend);
        limit("disk_limit_mib", req.diskLimitMib(), MIN_DISK_LIMIT_MIB, MAX_DISK_LIMIT_MIB,
                caps.contains(Capability.DISK_LIMIT), backend);
        Integer vcpus = req.vcpus();
        if (vcpus != null) {
            if (vcpus < 1 || vcpus > MAX_VCPUS) {
                throw ApiException.badRequest("vcpus must be between 1 and " + MAX_VCPUS + ", got " + vcpus);
            }
            if (!caps.contains(Capability.VCPUS)) {
                throw ApiException.badRequest("vcpus is not supported by backend " + backend
                        + " (its sandboxes are not machines with virtual CPUs); omit it or choose a VM backend");
            }
        }
        String image = req.image();
        if (image != null) {
            if (!IMAGE_NAME.matcher(image).matches()) {
                throw ApiException.badRequest("image must be a name of letters, digits, '.', '_' and '-' (at most 128, "
                        + "not starting with a punctuation mark), got \"" + image + "\"");
            }
            if (!caps.contains(Capability.IMAGE)) {
                throw ApiException.badRequest("image is not supported by backend " + backend
                        + " (it has no images or templates); omit it");
            }
        }
    }

    private static void limit(String field, Integer value, int min, int max, boolean supported, String backend) {
        if (value == null) {
            return;
        }
        if (value < min || value > max) {
            throw ApiException.badRequest(field + " must be between " + min + " and " + max + ", got " + value);
        }
        if (!supported) {
            throw ApiException.badRequest(field + " is not supported by backend " + backend
                    + " on this host; omit it to create the sandbox without that limit");
        }
    }
}
