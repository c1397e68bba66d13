package io.vivarium.backend.procbox.internal;

import org.osgi.service.metatype.annotations.AttributeDefinition;
import org.osgi.service.metatype.annotations.ObjectClassDefinition;

@ObjectClassDefinition(name = "Vivarium process-sandbox backend",
        description = "Runs sandboxes as bubblewrap process trees on this host.")
public @interface ProcboxConfig {

    String PID = "io.vivarium.backend.procbox";

    @AttributeDefinition(description = "Host uid the sandboxed processes run as (when the daemon runs as root).")
    int sandbox_uid() default 65534;

    @AttributeDefinition(description = "Host gid the sandboxed processes run as (when the daemon runs as root).")
    int sandbox_gid() default 65534;

    @AttributeDefinition(description = "Path of the bubblewrap executable.")
    String bwrap_path() default "/usr/bin/bwrap";

    @AttributeDefinition(description = "Where the cgroup filesystems are mounted; empty means /sys/fs/cgroup, "
            + "probed for a cgroup v2 memory controller first and a v1 memory hierarchy second.")
    String cgroup_root() default "";
}
