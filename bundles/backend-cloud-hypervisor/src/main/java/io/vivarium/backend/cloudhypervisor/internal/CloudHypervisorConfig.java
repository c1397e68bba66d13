package io.vivarium.backend.cloudhypervisor.internal;

import org.osgi.service.metatype.annotations.AttributeDefinition;
import org.osgi.service.metatype.annotations.ObjectClassDefinition;

/**
 * The Cloud Hypervisor backend's configuration, PID {@value #PID}. Each {@code __} in a method
 * name is Declarative Services' escape for one {@code _} (docs/architecture.md, "Configuration keys").
 */
@ObjectClassDefinition(name = "Vivarium Cloud Hypervisor backend",
        description = "Runs plain virtual machines (POST /v1/vms) under Cloud Hypervisor, booted from built guest images; "
                + "needs KVM.")
public @interface CloudHypervisorConfig {

    String PID = "io.vivarium.backend.cloudhypervisor";

    @AttributeDefinition(description = "Path of the cloud-hypervisor executable (a release binary: Debian has none).")
    String cloud__hypervisor__path() default "/usr/local/bin/cloud-hypervisor";

    @AttributeDefinition(description = "Where the guest images are (guest-agent/image); empty means $VIVARIUM_IMAGES, "
            + "else ~/.cache/vivarium/images.")
    String image__dir() default "";

    @AttributeDefinition(description = "The image a VM boots.")
    String default__image() default "default";

    @AttributeDefinition(description = "Guest memory in MiB of a VM created without memory_limit_mib.")
    int default__memory__mib() default 256;

    @AttributeDefinition(description = "Virtual CPUs of a VM created without vcpus.")
    int default__vcpus() default 1;

    @AttributeDefinition(description = "Size of a VM's workspace disk in MiB (an ext4 file, sparse).")
    int workspace__mib() default 1024;

    @AttributeDefinition(description = "How long a boot may take until the guest agent answers, in seconds.")
    int boot__timeout__secs() default 30;
}
