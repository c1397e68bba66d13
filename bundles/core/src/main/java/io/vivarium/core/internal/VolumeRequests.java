package io.vivarium.core.internal;

import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.regex.Pattern;

import io.vivarium.api.ApiException;
import io.vivarium.api.Capability;
import io.vivarium.api.VolumeMount;
import io.vivarium.api.VolumeService;

/** Checks the {@code volumes} of a create, once, before anything is made (docs/volumes.md). */
final class VolumeRequests {
    static final int MAX_VOLUMES = 16;
    private static final int MAX_PATH = 255;
    /** One name in a path: no spaces or quotes, nothing a mount table or a shell would read twice. */
    private static final Pattern SEGMENT = Pattern.compile("[A-Za-z0-9._@+-]+");
    /**
     * Where a volume would hide or replace what the sandbox's system needs: the system's
     * directories, and {@code /opt/vivarium}, where a backend may put the guest agent it runs.
     */
    private static final List<String> SYSTEM = List.of("/bin", "/boot", "/dev", "/etc", "/lib", "/lib32", "/lib64",
            "/libx32", "/opt/vivarium", "/proc", "/run", "/sbin", "/sys", "/usr", "/var/run");

    private VolumeRequests() {
    }

    static void check(List<VolumeMount> volumes, String backend, List<String> caps) {
        if (volumes.isEmpty()) {
            return;
        }
        if (!caps.contains(Capability.VOLUMES)) {
            throw ApiException.badRequest("volumes are not supported by backend " + backend + " (it does not report "
                    + Capability.VOLUMES + "); choose a backend that does (GET /v1/backends)");
        }
        if (volumes.size() > MAX_VOLUMES) {
            throw ApiException.badRequest("at most " + MAX_VOLUMES + " volumes per sandbox, got " + volumes.size());
        }
        Set<String> names = new HashSet<>();
        for (VolumeMount m : volumes) {
            if (m == null || m.name() == null || !VolumeService.NAME.matcher(m.name()).matches()) {
                throw ApiException.badRequest("each volume needs the name of one of your volumes (GET /v1/volumes), got "
                        + (m == null ? "null" : m.name() == null ? "no name" : "\"" + m.name() + "\""));
            }
            if (!names.add(m.name())) {
                throw ApiException.badRequest("volume " + m.name() + " is named twice; mount it once");
            }
            checkMountPath(m);
            checkSubPath(m);
        }
        for (VolumeMount a : volumes) {
            for (VolumeMount b : volumes) {
                if (a != b && within(b.mountPath(), a.mountPath())) {
                    throw ApiException.badRequest("mount_path " + b.mountPath() + " of volume " + b.name()
                            + " lies inside " + a.mountPath() + " of volume " + a.name() + "; mount them side by side");
                }
            }
        }
    }

    private static void checkMountPath(VolumeMount m) {
        String path = m.mountPath();
        String what = "mount_path of volume " + m.name();
        if (path == null || path.isEmpty()) {
            throw ApiException.badRequest(what + " is required: an absolute path such as /data");
        }
        if (!path.startsWith("/") || path.equals("/")) {
            throw ApiException.badRequest(what + " must be an absolute path other than /, got \"" + path + "\"");
        }
        checkSegments(what, path.substring(1));
        for (String system : SYSTEM) {
            if (within(system, path)) {
                throw ApiException.badRequest(what + " must not be in the system directory " + system + ", got " + path);
            }
        }
    }

    private static void checkSubPath(VolumeMount m) {
        if (m.subPath() == null) {
            return;
        }
        String what = "sub_path of volume " + m.name();
        if (m.subPath().startsWith("/")) {
            throw ApiException.badRequest(what + " is relative to the volume's root, got \"" + m.subPath() + "\"");
        }
        checkSegments(what, m.subPath());
    }

    /** A relative path of plain names: no empty, {@code .} or {@code ..} name, so it never leaves its root. */
    private static void checkSegments(String what, String relative) {
        if (relative.length() > MAX_PATH) {
            throw ApiException.badRequest(what + " is longer than " + MAX_PATH + " characters");
        }
        for (String segment : relative.split("/", -1)) {
            if (segment.equals(".") || segment.equals("..") || !SEGMENT.matcher(segment).matches()) {
                throw ApiException.badRequest(what + " must be a normal path of names made of letters, digits and "
                        + "._@+- (no empty, '.' or '..' part, no trailing slash), got \"" + relative + "\"");
            }
        }
    }

    /** Whether {@code path} is {@code dir} or below it. */
    private static boolean within(String dir, String path) {
        return path.equals(dir) || path.startsWith(dir + "/");
    }
}
