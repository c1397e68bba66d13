package io.vivarium.core.internal;

import java.lang.System.Logger.Level;
import java.util.Optional;

import io.vivarium.api.ResourceUsage;
import io.vivarium.api.SandboxInfo;
import io.vivarium.api.spi.SandboxInstance;

/** A sandbox's info with what its instance uses now; a backend failing to measure never fails the request that shows it. */
final class Usage {
    private static final System.Logger LOG = System.getLogger(Usage.class.getName());

    private Usage() {
    }

    static SandboxInfo infoOf(Sandbox sb) {
        SandboxInfo info = sb.info();
        SandboxInstance instance = sb.instance();
        return instance == null ? info : usage(sb, instance).map(info::withUsage).orElse(info);
    }

    private static Optional<ResourceUsage> usage(Sandbox sb, SandboxInstance instance) {
        try {
            return instance.usage();
        } catch (RuntimeException e) {
            LOG.log(Level.WARNING, "measuring the usage of sandbox " + sb.record().id() + " failed", e);
            return Optional.empty();
        }
    }
}
