package io.vivarium.backend.firecracker.internal;

import org.osgi.service.metatype.annotations.AttributeDefinition;
import org.osgi.service.metatype.annotations.ObjectClassDefinition;

/**
 * The Firecracker backend's configuration, PID {@value #PID}. Each {@code __} in a method name is
 * Declarative Services' escape for one {@code _} (docs/architecture.md, "Configuration keys").
 */
@ObjectClassDefinition(name = "Vivarium Firecracker backend",
        description = "Runs sandboxes as Firecracker microVMs booted from built guest images; needs KVM.")
public @interface FirecrackerConfig {

    String PID = "io.vivarium.backend.firecracker";

    @AttributeDefinition(description = "Path of the firecracker executable (a release binary: Debian has none).")
    String firecracker__path() default "/usr/local/bin/firecracker";

    @AttributeDefinition(description = "Where the guest images are (guest-agent/image); empty means $VIVARIUM_IMAGES, "
            + "else ~/.cache/vivarium/images.")
    String image__dir() default "";

    @AttributeDefinition(description = "The image a sandbox boots.")
    String default__image() default "default";

    @AttributeDefinition(description = "Guest memory in MiB.")
    int default__memory__mib() default 256;

    @AttributeDefinition(description = "Virtual CPUs of a sandbox created without vcpus (1 or an even number, at most 32).")
    int default__vcpus() default 1;

    @AttributeDefinition(description = "Size of a sandbox's workspace disk in MiB (an ext4 file, sparse).")
    int workspace__mib() default 1024;

    @AttributeDefinition(description = "How long a boot may take until the guest agent answers, in seconds.")
    int boot__timeout__secs() default 30;
}
