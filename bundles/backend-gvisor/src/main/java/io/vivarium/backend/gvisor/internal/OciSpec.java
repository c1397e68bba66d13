package io.vivarium.backend.gvisor.internal;

import io.vivarium.api.spi.AttachedVolume;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import io.vivarium.kit.agent.AgentBinary;
import io.vivarium.common.files.AtomicFiles;
import io.vivarium.common.net.SavedPolicy;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * The OCI runtime spec ({@code config.json}) of a container: the agent as process 1, started as
 * root inside gVisor's sentry with only the capabilities it needs to become the sandbox user (its
 * worker drops them all), listening on a socket in a host directory bound at {@value #AGENT_DIR};
 * the root filesystem read-only; the workspace at {@value #WORKSPACE}; no network (runsc's
 * {@code --network=none}) unless it is given one ({@link Network}); the memory limit in the
 * container's cgroup.
 */
final class OciSpec {

    static final String WORKSPACE = "/work";
    static final String AGENT_DIR = "/run/vivarium";
    static final String AGENT_BINARY_DIR = "/opt/vivarium";
    private static final List<String> PROGRAM_DIRS = List.of("bin", "sbin", "lib", "lib32", "lib64", "libx32");
    private static final List<String> AGENT_CAPABILITIES = List.of("CAP_SETUID", "CAP_SETGID", "CAP_SETPCAP");
    private static final ObjectMapper JSON = new ObjectMapper();

    private OciSpec() {
    }

    /**
     * A container's network: the named network namespace its sandbox joins (runsc's network stack
     * takes the interfaces there over), the resolver file bound at {@code /etc/resolv.conf}, and the
     * policy it was made under with its resolver, kept in the spec's annotations (runsc reads none of
     * ours) so that a wake after the host rebooted can make the namespace again ({@link #savedPolicy}).
     */
    record Network(Path namespace, Path resolvConf, SavedPolicy policy) {
    }

    /** The prefix of the annotations that keep it: {@code io.vivarium.network.allow}, {@code .deny}, {@code .resolver}. */
    private static final String ANNOTATIONS = "io.vivarium.network.";

    /**
     * The spec of a container.
     *
     * @param root the root filesystem, or the skeleton of the host layout (whose /usr is bound in)
     * @param hostLayout whether {@code root} is that skeleton
     * @param agentBinaryDir the host directory holding the agent binary
     * @param memoryLimitMib the memory limit, or null for none
     * @param volumes the volumes core made ready, bound after the workspace they may lie in
     * @param network its network, or null for loopback alone
     */
    static ObjectNode of(String hostname, Path root, boolean hostLayout, Path agentBinaryDir, ContainerFiles files,
            int uid, int gid, Integer memoryLimitMib, List<AttachedVolume> volumes, Network network) {
        ObjectNode spec = JSON.createObjectNode();
        spec.put("ociVersion", "1.0.2");
        ObjectNode process = spec.putObject("process");
        process.put("terminal", false);
        process.putObject("user").put("uid", 0).put("gid", 0);
        ArrayNode args = process.putArray("args");
        for (String arg : List.of(AGENT_BINARY_DIR + "/" + AgentBinary.FILE_NAME, "--listen",
                "unix:" + AGENT_DIR + "/" + ContainerFiles.SOCKET_NAME, "--user", uid + ":" + gid)) {
            args.add(arg);
        }
        process.putArray("env").add("PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin").add("LANG=C.UTF-8");
        process.put("cwd", WORKSPACE);
        process.put("noNewPrivileges", true);
        ObjectNode caps = process.putObject("capabilities");
        for (String set : List.of("bounding", "effective", "permitted")) {
            ArrayNode list = caps.putArray(set);
            AGENT_CAPABILITIES.forEach(list::add);
        }
        spec.putObject("root").put("path", root.toString()).put("readonly", true);
        spec.put("hostname", hostname);
        ArrayNode mounts = spec.putArray("mounts");
        mount(mounts, "/proc", "proc", "proc", List.of());
        mount(mounts, "/dev", "tmpfs", "tmpfs", List.of("nosuid", "mode=755"));
        // terminals (GET .../pty): their own instance, as runc's default spec has it
        mount(mounts, "/dev/pts", "devpts", "devpts", List.of("nosuid", "noexec", "newinstance", "ptmxmode=0666", "mode=0620"));
        mount(mounts, "/tmp", "tmpfs", "tmpfs", List.of("nosuid", "nodev", "mode=1777"));
        if (hostLayout) {
            bind(mounts, Path.of("/usr"), "/usr", true);
            for (String name : PROGRAM_DIRS) {
                Path host = Path.of("/", name);
                if (Files.isDirectory(host) && !Files.isSymbolicLink(host)) {
                    bind(mounts, host, "/" + name, true);
                }
            }
        }
        bind(mounts, agentBinaryDir, AGENT_BINARY_DIR, true);
        bind(mounts, files.agentDir(), AGENT_DIR, false);
        bind(mounts, files.workspace(), WORKSPACE, false);
        for (AttachedVolume v : volumes) {
            bind(mounts, v.hostDir(), v.mountPath(), v.readOnly());
        }
        if (network != null) {
            bind(mounts, network.resolvConf(), "/etc/resolv.conf", true);
        }
        ObjectNode linux = spec.putObject("linux");
        ArrayNode namespaces = linux.putArray("namespaces");
        for (String ns : List.of("pid", "network", "ipc", "uts", "mount")) {
            ObjectNode n = namespaces.addObject().put("type", ns);
            if (ns.equals("network") && network != null) {
                n.put("path", network.namespace().toString());
            }
        }
        if (memoryLimitMib != null) {
            linux.putObject("resources").putObject("memory").put("limit", memoryLimitMib * 1024L * 1024L);
        }
        if (network != null) {
            ObjectNode annotations = spec.putObject("annotations");
            network.policy().toText(ANNOTATIONS).forEach(annotations::put);
        }
        return spec;
    }

    private static void mount(ArrayNode mounts, String destination, String type, String source, List<String> options) {
        ObjectNode m = mounts.addObject().put("destination", destination).put("type", type).put("source", source);
        if (!options.isEmpty()) {
            ArrayNode o = m.putArray("options");
            options.forEach(o::add);
        }
    }

    private static void bind(ArrayNode mounts, Path source, String destination, boolean readOnly) {
        mount(mounts, destination, "bind", source.toString(), List.of("rbind", readOnly ? "ro" : "rw"));
    }

    /**
     * The skeleton root of the host layout in {@code dir}: the mount points, and the host's
     * {@code /bin}, {@code /lib*} where they are links into {@code /usr} (the real directories are
     * bound by {@link #of}).
     */
    static void writeSkeleton(Path dir) throws IOException {
        for (String d : List.of("usr", "proc", "dev", "tmp", "etc", "run/vivarium", "opt/vivarium", "work")) {
            Files.createDirectories(dir.resolve(d));
        }
        for (String name : PROGRAM_DIRS) {
            Path host = Path.of("/", name);
            if (Files.isSymbolicLink(host)) {
                Files.createSymbolicLink(dir.resolve(name), Files.readSymbolicLink(host));
            } else if (Files.isDirectory(host)) {
                Files.createDirectories(dir.resolve(name));
            }
        }
    }

    /** The memory limit written in a container's {@code config.json}, or null for none. */
    static Integer memoryLimitMib(Path config) throws IOException {
        JsonNode limit = JSON.readTree(config.toFile()).path("linux").path("resources").path("memory").path("limit");
        return limit.isIntegralNumber() ? (int) (limit.asLong() >> 20) : null;
    }

    /** The named network namespace a container's {@code config.json} joins, if it has a network. */
    static Optional<Path> networkNamespace(Path config) throws IOException {
        for (JsonNode n : JSON.readTree(config.toFile()).path("linux").path("namespaces")) {
            if (n.path("type").asText().equals("network") && n.hasNonNull("path")) {
                return Optional.of(Path.of(n.path("path").asText()));
            }
        }
        return Optional.empty();
    }

    /** The policy a container's {@code config.json} keeps for its network, if it has one and was written with it. */
    static Optional<SavedPolicy> savedPolicy(Path config) throws IOException {
        Map<String, String> annotations = new HashMap<>();
        JSON.readTree(config.toFile()).path("annotations").properties().forEach(e -> annotations.put(e.getKey(),
                e.getValue().asText()));
        return SavedPolicy.fromText(annotations, ANNOTATIONS);
    }

    /** The root filesystem written in a container's {@code config.json}. */
    static Path root(Path config) throws IOException {
        return Path.of(JSON.readTree(config.toFile()).path("root").path("path").asText());
    }

    /**
     * Points the agent binary's mount of a written {@code config.json} at {@code agentBinaryDir}:
     * a container restored by another daemon revision than the one that created it finds the
     * binary where this one installed it (the old directory may be gone with the old revision).
     */
    static void rebindAgentBinary(Path config, Path agentBinaryDir) throws IOException {
        ObjectNode spec = (ObjectNode) JSON.readTree(config.toFile());
        for (JsonNode m : spec.path("mounts")) {
            if (AGENT_BINARY_DIR.equals(m.path("destination").asText())) {
                ((ObjectNode) m).put("source", agentBinaryDir.toString());
            }
        }
        AtomicFiles.write(config, bytes(spec));
    }

    static byte[] bytes(ObjectNode spec) throws IOException {
        return JSON.writerWithDefaultPrettyPrinter().writeValueAsBytes(spec);
    }
}
