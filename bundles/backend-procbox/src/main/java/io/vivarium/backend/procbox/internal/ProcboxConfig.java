package io.vivarium.backend.procbox.internal;

import org.osgi.service.metatype.annotations.AttributeDefinition;
import org.osgi.service.metatype.annotations.ObjectClassDefinition;

/**
 * The procbox backend's configuration, PID {@value #PID}. Each {@code __} in a method name is
 * Declarative Services' escape for one {@code _}: {@code sandbox__uid()} reads the key
 * {@code sandbox_uid} that operators write (a single {@code _} would read {@code sandbox.uid});
 * see docs/architecture.md, "Configuration keys".
 */
@ObjectClassDefinition(name = "Vivarium process-sandbox backend",
        description = "Runs sandboxes as bubblewrap process trees on this host.")
public @interface ProcboxConfig {

    String PID = "io.vivarium.backend.procbox";

    @AttributeDefinition(description = "Host uid the sandboxed processes run as (when the daemon runs as root).")
    int sandbox__uid() default 65534;

    @AttributeDefinition(description = "Host gid the sandboxed processes run as (when the daemon runs as root).")
    int sandbox__gid() default 65534;

    @AttributeDefinition(description = "Path of the bubblewrap executable.")
    String bwrap__path() default "/usr/bin/bwrap";

    @AttributeDefinition(description = "Where the cgroup filesystems are mounted; empty means /sys/fs/cgroup. "
            + "Probed for the memory and pids controllers, each in cgroup v2 first (the root's cgroup.controllers "
            + "lists it) and in the v1 hierarchy of its name below the root second. Where no writable memory "
            + "controller is found, procbox does not offer memory_limit (a create with memory_limit_mib is a 400); "
            + "where no pids controller is, sandboxes run without a pids limit and pids_limit is refused the same way.")
    String cgroup__root() default "";

    @AttributeDefinition(description = "Most processes and threads a sandbox created without pids_limit may have "
            + "at once (a cgroup pids limit; a fork bomb stops there); 0 for none. Ignored where no pids cgroup is writable.")
    int default__pids__limit() default ProcboxSettings.DEFAULT_PIDS_LIMIT;

    @AttributeDefinition(description = "Workspace size in MiB of a sandbox created without disk_limit_mib: each "
            + "workspace is a loop-mounted ext4 image of that size, so filling it gives the sandbox ENOSPC; 0 for a plain directory without a limit. "
            + "Ignored where the daemon cannot loop-mount (not root).")
    int default__disk__limit__mib() default ProcboxSettings.DEFAULT_DISK_LIMIT_MIB;

    @AttributeDefinition(description = "Where the pre-formatted workspace templates are kept; empty means "
            + "vivarium-procbox-templates in the JVM's temporary directory. Remade when missing.")
    String workspace__template__dir() default "";

    @AttributeDefinition(description = "How many copies of the default workspace image are made ahead of time, in "
            + "the background after the first create, so that a create moves one into place instead of copying; 0 for "
            + "none. They are kept in the template directory, which must be on the filesystem of the state directory "
            + "for them to be used (else the pool turns itself off and says so); each takes a few hundred KiB of disk. "
            + "Off by default: each copy costs a process spawned by the daemon, more CPU than the sparse copy it "
            + "saves a create, which the launch makes itself.")
    int workspace__pool__size() default ProcboxSettings.DEFAULT_WORKSPACE_POOL_SIZE;

    @AttributeDefinition(description = "How many sandboxes of the default spec (no memory, pids or disk limit asked for, "
            + "no image) are launched ahead of time, in the background from the first create on, so that such a create "
            + "takes one (its hostname set to the new id) instead of waiting for a launch; 0 for none. They are not "
            + "sandboxes yet: not listed, not counted by max_sandboxes, each a few hundred KiB of memory and a loop "
            + "device. Kept in procbox-pool beside the state directory's sandboxes; discarded when the backend stops, "
            + "and by the next daemon if this one is killed.")
    int sandbox__pool__size() default ProcboxSettings.DEFAULT_SANDBOX_POOL_SIZE;
}
