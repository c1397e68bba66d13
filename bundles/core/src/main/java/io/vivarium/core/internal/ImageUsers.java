package io.vivarium.core.internal;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;

/**
 * A template's {@code user} ({@code name} or {@code uid}, with an optional {@code :group} or
 * {@code :gid}) resolved in the image's own {@code /etc/passwd} and {@code /etc/group}, as the
 * image's {@code User} is. Those files are read only if they are regular files of the image (never
 * through a link, which could lead out of it).
 */
final class ImageUsers {
    private static final long MAX_FILE_BYTES = 1 << 20;

    private ImageUsers() {
    }

    /** {uid, gid}: a name's gid is its passwd entry's unless a group is given; a bare uid's gid is the uid's entry's, else 0. */
    static int[] resolve(Path rootfs, String user) throws IOException {
        int colon = user.indexOf(':');
        String who = colon < 0 ? user : user.substring(0, colon);
        String[] passwd = entry(rootfs.resolve("etc/passwd"), who, 2);
        int uid;
        if (number(who)) {
            uid = id(who, "uid " + who);
        } else if (passwd != null) {
            uid = id(passwd[2], "the uid of " + who + " in the image's /etc/passwd");
        } else {
            throw new IOException("user " + who + " is not in the image's /etc/passwd");
        }
        int gid;
        if (colon >= 0) {
            String group = user.substring(colon + 1);
            if (number(group)) {
                gid = id(group, "gid " + group);
            } else {
                String[] g = entry(rootfs.resolve("etc/group"), group, 2);
                if (g == null) {
                    throw new IOException("group " + group + " is not in the image's /etc/group");
                }
                gid = id(g[2], "the gid of group " + group + " in the image's /etc/group");
            }
        } else {
            gid = passwd != null && passwd.length > 3 ? id(passwd[3], "the gid of " + who + " in the image's /etc/passwd") : 0;
        }
        return new int[] {uid, gid};
    }

    /** The line of {@code file} whose name (or, for a number, whose id in field {@code idField}) is {@code who}. */
    private static String[] entry(Path file, String who, int idField) throws IOException {
        if (!Files.isDirectory(file.getParent(), LinkOption.NOFOLLOW_LINKS)
                || !Files.isRegularFile(file, LinkOption.NOFOLLOW_LINKS) || Files.size(file) > MAX_FILE_BYTES) {
            return null;
        }
        boolean number = number(who);
        for (String line : Files.readAllLines(file, StandardCharsets.UTF_8)) {
            String[] fields = line.split(":", -1);
            if (fields.length > idField && (number ? fields[idField].equals(who) : fields[0].equals(who))
                    && number(fields[idField])) {
                return fields;
            }
        }
        return null;
    }

    private static boolean number(String s) {
        return !s.isEmpty() && s.length() <= 10 && s.chars().allMatch(c -> c >= '0' && c <= '9');
    }

    /** An id as the image writes it: a decimal number a uid or gid can be, else an IOException saying {@code what}. */
    private static int id(String s, String what) throws IOException {
        long v = number(s) ? Long.parseLong(s) : -1;
        if (v < 0 || v > 0xfffffffeL || v > Integer.MAX_VALUE) {
            throw new IOException(what + " is '" + s + "', not a number a uid or gid can be");
        }
        return (int) v;
    }
}
