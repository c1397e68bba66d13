package io.vivarium.fleet.internal;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

import io.vivarium.api.BackendInfo;

/**
 * What a host is, as far as running a sandbox's image is concerned: the engine's version, each
 * backend's version, the kernel release and the CPU (vendor, model, flags). Two nodes with the
 * same fingerprint can run each other's images; placement keys on it alone, and a node whose
 * fingerprint differs from its pool's joins {@code <pool>#<fp8>}.
 */
record HostFingerprint(String engineVersion, Map<String, String> backends, String kernel, String cpuVendor,
        String cpuModel, String cpuFlags) {

    HostFingerprint {
        backends = backends == null ? Map.of() : new TreeMap<>(backends);
    }

    /** The kernel and CPU, which do not change while the daemon runs: read from /proc once, not at every hello. */
    private record Machine(String kernel, String cpuVendor, String cpuModel, String cpuFlags) {
        static final Machine THIS = read();

        private static Machine read() {
            Map<String, String> cpu = firstProcessor(HostFingerprint.read(Path.of("/proc/cpuinfo")));
            return new Machine(HostFingerprint.read(Path.of("/proc/sys/kernel/osrelease")).strip(),
                    cpu.getOrDefault("vendor_id", ""), cpu.getOrDefault("model name", ""),
                    String.join(" ", new java.util.TreeSet<>(List.of(cpu.getOrDefault("flags", "").split("\\s+")))).strip());
        }
    }

    /** This host's fingerprint: the engine's and backends' versions as they are now, the kernel and CPU from /proc. */
    static HostFingerprint ofThisHost(String engineVersion, List<BackendInfo> backends) {
        Map<String, String> versions = new TreeMap<>();
        for (BackendInfo b : backends) {
            versions.put(b.name(), b.version());
        }
        Machine m = Machine.THIS;
        return new HostFingerprint(engineVersion, versions, m.kernel(), m.cpuVendor(), m.cpuModel(), m.cpuFlags());
    }

    /** The first eight hex digits of the SHA-256 of the fingerprint's JSON: the suffix of a split pool. */
    String fp8() {
        try {
            byte[] digest = MessageDigest.getInstance("SHA-256").digest(FleetJson.write(this));
            return HexFormat.of().formatHex(digest).substring(0, 8);
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }

    static Map<String, String> firstProcessor(String cpuinfo) {
        Map<String, String> fields = new TreeMap<>();
        for (String line : cpuinfo.split("\n")) {
            if (line.isBlank()) {
                if (!fields.isEmpty()) {
                    break;
                }
                continue;
            }
            int colon = line.indexOf(':');
            if (colon > 0) {
                fields.putIfAbsent(line.substring(0, colon).strip(), line.substring(colon + 1).strip());
            }
        }
        return fields;
    }

    private static String read(Path p) {
        try {
            return Files.readString(p, StandardCharsets.UTF_8);
        } catch (IOException e) {
            return "";
        }
    }
}
