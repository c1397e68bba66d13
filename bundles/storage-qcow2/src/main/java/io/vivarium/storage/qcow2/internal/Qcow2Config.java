package io.vivarium.storage.qcow2.internal;

import org.osgi.service.metatype.annotations.AttributeDefinition;
import org.osgi.service.metatype.annotations.ObjectClassDefinition;

@ObjectClassDefinition(name = "Vivarium qcow2 storage",
        description = "Stores VM disks as qcow2 overlays on backing files, through qemu-img.")
public @interface Qcow2Config {

    String PID = "io.vivarium.storage.qcow2";

    @AttributeDefinition(description = "Path of the qemu-img executable.")
    String qemu_img_path() default "/usr/bin/qemu-img";
}
