package io.vivarium.core.internal;

import java.nio.charset.StandardCharsets;
import java.util.regex.Pattern;

import io.vivarium.api.ApiException;
import io.vivarium.api.SnapshotService;

/**
 * Snapshot tags and tenants as directory names. A tag is a plain name ({@link SnapshotService#TAG}):
 * no slash, no leading dot, so {@code ..} and absolute paths never reach the filesystem. A tenant
 * comes from the token file and may hold any character: one that is not a plain name is written
 * as {@code %} and its UTF-8 bytes in hex, which no plain name can collide with.
 */
final class SnapshotTags {
    private static final Pattern PLAIN = Pattern.compile(SnapshotService.TAG);

    private SnapshotTags() {
    }

    /** A tag a caller sent, as the field {@code field}: 400 telling what a tag may be unless it is one. */
    static String check(String field, String tag) {
        if (tag == null || tag.isEmpty()) {
            throw ApiException.badRequest(field + " is required: a plain name such as \"py-base\"");
        }
        if (!PLAIN.matcher(tag).matches()) {
            throw ApiException.badRequest(field + " must be a plain name of letters, digits, '.', '_' and '-' (at most 64, "
                    + "starting with a letter or digit; no slashes, no leading dot), got \"" + printable(tag) + "\"");
        }
        return tag;
    }

    static String tenantDir(String tenant) {
        if (PLAIN.matcher(tenant).matches()) {
            return tenant;
        }
        StringBuilder b = new StringBuilder("%");
        for (byte x : tenant.getBytes(StandardCharsets.UTF_8)) {
            b.append(String.format("%02x", x));
        }
        return b.toString();
    }

    /**
     * The key of the snapshot {@code tag} of {@code tenant} in the state store's {@code snapshots}
     * collection, made of the snapshot's directory names: {@code <n>-<t>.<tag>}, where {@code t} is
     * the tenant's directory ({@link #tenantDir}) with a leading {@code %} written {@code _} (no plain
     * name starts with one) and {@code n} its length. Reversible: read the digits before the first
     * {@code -}, take that many characters as the tenant's directory, skip the {@code .}, the rest is
     * the tag; so two snapshots never share a key whatever dots their names hold.
     */
    static String key(String tenant, String tag) {
        return keyOfDirs(tenantDir(tenant), tag);
    }

    static String keyOfDirs(String tenantDir, String tag) {
        String t = tenantDir.startsWith("%") ? "_" + tenantDir.substring(1) : tenantDir;
        return t.length() + "-" + t + "." + tag;
    }

    private static String printable(String s) {
        StringBuilder b = new StringBuilder();
        s.codePoints().limit(80).forEach(c -> b.append(c < 0x20 || c == 0x7f ? String.format("\\u%04x", c) : Character.toString(c)));
        return b.toString();
    }
}
