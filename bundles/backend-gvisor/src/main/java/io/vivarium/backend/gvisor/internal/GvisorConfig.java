package io.vivarium.backend.gvisor.internal;

import org.osgi.service.metatype.annotations.AttributeDefinition;
import org.osgi.service.metatype.annotations.ObjectClassDefinition;

/**
 * The gVisor backend's configuration, PID {@value #PID}. Each {@code __} in a method name is
 * Declarative Services' escape for one {@code _}: {@code runsc__path()} reads the key
 * {@code runsc_path} that operators write; see docs/architecture.md, "Configuration keys".
 */
@ObjectClassDefinition(name = "Vivarium gVisor backend",
        description = "Runs sandboxes as gVisor (runsc) containers from an OCI bundle the backend writes.")
public @interface GvisorConfig {

    String PID = "io.vivarium.backend.gvisor";

    @AttributeDefinition(description = "Path of the runsc executable (Debian package runsc).")
    String runsc__path() default "/usr/bin/runsc";

    @AttributeDefinition(description = "The containers' root filesystem, mounted read-only: a directory; empty means "
            + "the one bundles/backend-gvisor/build-rootfs.sh builds ($VIVARIUM_IMAGES, else ~/.cache/vivarium/images, "
            + "then gvisor-rootfs); 'host' means the host's /usr (and its /bin, /lib* links), as procbox has it.")
    String rootfs() default "";

    @AttributeDefinition(description = "Uid the sandboxed processes run as inside the container and own the workspace as on the host.")
    int sandbox__uid() default 65534;

    @AttributeDefinition(description = "Gid the sandboxed processes run as.")
    int sandbox__gid() default 65534;

    @AttributeDefinition(description = "How long a start may take until the guest agent answers, in seconds.")
    int start__timeout__secs() default GvisorSettings.DEFAULT_START_TIMEOUT_SECS;
}
