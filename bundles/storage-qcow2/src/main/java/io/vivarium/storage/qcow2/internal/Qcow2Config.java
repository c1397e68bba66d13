package io.vivarium.storage.qcow2.internal;

import org.osgi.service.metatype.annotations.AttributeDefinition;
import org.osgi.service.metatype.annotations.ObjectClassDefinition;

/**
 * The qcow2 storage strategy's configuration, PID {@value #PID}. Each {@code __} in a method name
 * is Declarative Services' escape for one {@code _}: {@code qemu__img__path()} reads the key
 * {@code qemu_img_path} that operators write (a single {@code _} would read
 * {@code qemu.img.path}); see docs/architecture.md, "Configuration keys".
 */
@ObjectClassDefinition(name = "Vivarium qcow2 storage",
        description = "Stores VM disks as qcow2 overlays on backing files, through qemu-img.")
public @interface Qcow2Config {

    String PID = "io.vivarium.storage.qcow2";

    @AttributeDefinition(description = "Path of the qemu-img executable.")
    String qemu__img__path() default "/usr/bin/qemu-img";
}
