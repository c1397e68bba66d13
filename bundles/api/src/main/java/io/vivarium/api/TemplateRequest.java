package io.vivarium.api;

import java.util.List;
import java.util.Map;

/**
 * Body of {@code POST /v1/templates} (docs/templates.md): what every sandbox made from the template
 * gets. Only {@code name} and {@code image} are required; a null limit is the backend's default.
 * Since 2.10.
 *
 * @param name the template's name, daemon-wide ({@link TemplateService#NAME})
 * @param backend the backend its sandboxes run on, or null for the default one
 * @param image an OCI image written as skopeo's transports are: {@code docker://host/name:tag},
 *        {@code oci:/path/to/layout:tag} or {@code docker-archive:/path/image.tar}
 * @param vcpus virtual CPUs of a machine backend's sandboxes
 * @param memoryLimitMib memory limit of each sandbox
 * @param pidsLimit most processes of each sandbox
 * @param diskLimitMib size of each sandbox's workspace
 * @param env variables set for every command, over the image's {@code Env}
 * @param workdir where commands run, over the image's {@code WorkingDir}
 * @param user the user commands run as (a name from the image's {@code /etc/passwd}, or
 *        {@code uid[:gid]}), over the image's {@code User}
 * @param network its sandboxes' network, within the operator's policy
 * @param idle its sandboxes' idle policy
 * @param volumes volumes every sandbox of the template mounts
 * @param clientMaySet the create fields a client may set beside {@code template}:
 *        {@code memory_limit_mib}, {@code pids_limit}, {@code disk_limit_mib}, {@code vcpus},
 *        {@code network}, {@code idle}, {@code volumes}; any other is 403
 * @param setup a command (argv) run once when the template is built, in a sandbox of it as its
 *        user, whose workspace and (on a VM or gVisor) processes every sandbox of the template then
 *        starts from: a child of the snapshot taken after it; null for none; since 2.11
 */
public record TemplateRequest(String name, String backend, String image, Integer vcpus, Integer memoryLimitMib,
        Integer pidsLimit, Integer diskLimitMib, Map<String, String> env, String workdir, String user,
        NetworkPolicy network, IdlePolicy idle, List<VolumeMount> volumes, List<String> clientMaySet,
        List<String> setup) {

    public TemplateRequest {
        env = env == null ? Map.of() : Map.copyOf(env);
        volumes = volumes == null ? List.of() : List.copyOf(volumes);
        clientMaySet = clientMaySet == null ? List.of() : List.copyOf(clientMaySet);
        // a null argument stays, for core to refuse with a 400 naming it
        setup = setup == null ? null : java.util.Collections.unmodifiableList(new java.util.ArrayList<>(setup));
    }

    /** The request of API 2.10 (no setup). */
    public TemplateRequest(String name, String backend, String image, Integer vcpus, Integer memoryLimitMib,
            Integer pidsLimit, Integer diskLimitMib, Map<String, String> env, String workdir, String user,
            NetworkPolicy network, IdlePolicy idle, List<VolumeMount> volumes, List<String> clientMaySet) {
        this(name, backend, image, vcpus, memoryLimitMib, pidsLimit, diskLimitMib, env, workdir, user, network, idle, volumes,
                clientMaySet, null);
    }
}
