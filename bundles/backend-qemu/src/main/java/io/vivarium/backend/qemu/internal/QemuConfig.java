package io.vivarium.backend.qemu.internal;

import org.osgi.service.metatype.annotations.AttributeDefinition;
import org.osgi.service.metatype.annotations.ObjectClassDefinition;

/**
 * The QEMU backend's configuration, PID {@value #PID}. Each {@code __} in a method name is
 * Declarative Services' escape for one {@code _}: {@code image__dir()} reads the key
 * {@code image_dir} that operators write (a single {@code _} would read {@code image.dir});
 * see docs/architecture.md, "Configuration keys".
 */
@ObjectClassDefinition(name = "Vivarium QEMU backend",
        description = "Runs sandboxes as QEMU virtual machines booted from built guest images.")
public @interface QemuConfig {

    String PID = "io.vivarium.backend.qemu";

    @AttributeDefinition(description = "Path of the qemu-system-x86_64 executable.")
    String qemu__path() default "/usr/bin/qemu-system-x86_64";

    @AttributeDefinition(description = "Where the guest images are (one directory per image, DIR/NAME a link to "
            + "the newest build; see guest-agent/image); empty means $VIVARIUM_IMAGES, else ~/.cache/vivarium/images.")
    String image__dir() default "";

    @AttributeDefinition(description = "The image a sandbox created without one boots.")
    String default__image() default "default";

    @AttributeDefinition(description = "Guest memory in MiB of a sandbox created without memory_limit_mib.")
    int default__memory__mib() default QemuSettings.DEFAULT_MEMORY_MIB;

    @AttributeDefinition(description = "Virtual CPUs of a sandbox created without vcpus.")
    int default__vcpus() default 1;

    @AttributeDefinition(description = "How long a boot may take until the guest agent answers, in seconds; past "
            + "it the VM is killed and the create fails with the console's last lines.")
    int boot__timeout__secs() default QemuSettings.DEFAULT_BOOT_TIMEOUT_SECS;
}
