package io.vivarium.core.internal;

import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Pattern;

import io.vivarium.api.ApiException;
import io.vivarium.api.TemplateRequest;
import io.vivarium.api.TemplateService;

/** The checks of a template's request at the edge, once ({@code POST /v1/templates}), as {@link CreateRequests} for a create. */
final class TemplateRequests {

    /** The create fields a template may let clients set. */
    static final Set<String> CLIENT_FIELDS = Set.of("memory_limit_mib", "pids_limit", "disk_limit_mib", "vcpus", "network",
            "idle", "volumes");
    private static final Pattern USER = Pattern.compile("([a-z_][a-z0-9_.-]{0,31}|[0-9]{1,9})(:([a-z_][a-z0-9_.-]{0,31}|[0-9]{1,9}))?");
    private static final int MAX_ENV = 256;

    private TemplateRequests() {
    }

    /** Checks {@code r} on its own (its backend checks its sandbox fields: {@link Templates}); a 400 saying what to fix. */
    static void check(TemplateRequest r) {
        if (r == null) {
            throw ApiException.badRequest("a body is required: {\"name\": \"py\", \"image\": \"docker://host/name:tag\", ...}");
        }
        if (r.name() == null || !TemplateService.NAME.matcher(r.name()).matches()) {
            throw ApiException.badRequest("name must be 1 to 63 lower-case letters, digits, '.', '_' or '-', starting with a "
                    + "letter or digit, got " + (r.name() == null ? "none" : "\"" + r.name() + "\""));
        }
        if (r.image() == null || r.image().isBlank()) {
            throw ApiException.badRequest("image is required: an OCI image, docker://host/name:tag, oci:/path/to/layout:tag "
                    + "or docker-archive:/path/image.tar");
        }
        for (String field : r.clientMaySet()) {
            if (!CLIENT_FIELDS.contains(field)) {
                throw ApiException.badRequest("client_may_set names \"" + field + "\", which is not a field clients may be let "
                        + "set; they are: " + String.join(", ", new TreeSet<>(CLIENT_FIELDS)));
            }
        }
        if (r.env().size() > MAX_ENV) {
            throw ApiException.badRequest("env has " + r.env().size() + " variables; at most " + MAX_ENV);
        }
        r.env().forEach((k, v) -> {
            if (k.isEmpty() || k.indexOf('=') >= 0 || k.indexOf('\0') >= 0 || v.indexOf('\0') >= 0) {
                throw ApiException.badRequest("env " + k + " is invalid: a name without '=' or NUL and a string value");
            }
        });
        if (r.workdir() != null && (!r.workdir().startsWith("/") || r.workdir().indexOf('\0') >= 0 || r.workdir().length() > 4096)) {
            throw ApiException.badRequest("workdir must be an absolute path, got \"" + r.workdir() + "\"");
        }
        if (r.user() != null && !USER.matcher(r.user()).matches()) {
            throw ApiException.badRequest("user must be a name or uid, with an optional :group or :gid (e.g. app, 1000, "
                    + "1000:1000), got \"" + r.user() + "\"");
        }
        if (r.setup() != null) {
            checkSetup(r);
        }
    }

    /** A setup is a command; its template's sandboxes are forks of a snapshot, which carries no volumes and takes no client's values. */
    private static void checkSetup(TemplateRequest r) {
        if (r.setup().isEmpty() || r.setup().stream().anyMatch(a -> a == null || a.indexOf('\0') >= 0)) {
            throw ApiException.badRequest("setup must be a command without null or NUL arguments, e.g. [\"sh\", \"-c\", "
                    + "\"pip install --user numpy\"], or be left out");
        }
        if (!r.volumes().isEmpty()) {
            throw ApiException.badRequest("a template with a setup cannot mount volumes: its sandboxes are children of the "
                    + "snapshot taken after the setup, which carries none; mount them in a template without setup");
        }
        if (!r.clientMaySet().isEmpty()) {
            throw ApiException.badRequest("a template with a setup lets clients set nothing (client_may_set "
                    + r.clientMaySet() + "): its sandboxes are children of the snapshot taken after the setup, made as "
                    + "the template says");
        }
    }
}
