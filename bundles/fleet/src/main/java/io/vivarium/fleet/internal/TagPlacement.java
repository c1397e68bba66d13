package io.vivarium.fleet.internal;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;

/**
 * Which node holds a tenant's snapshot tag (built or branched there: its info, compaction and delete
 * go to that node), and which nodes hold a copy fetched from it (forks may run there too; a delete
 * drops them first).
 *
 * @param recordedAtUnix when the master recorded the tag (0 in a record older than this field): a
 *        reconciliation that asked the node before then does not drop it
 */
record TagPlacement(String tenant, String tag, String node, List<String> copies, long recordedAtUnix) {

    TagPlacement {
        copies = copies == null ? List.of() : copies.stream().sorted().distinct().toList();
    }

    /** Whether {@code id} holds the tag's image, its own or a copy. */
    boolean heldBy(String id) {
        return node.equals(id) || copies.contains(id);
    }

    TagPlacement withCopy(String id) {
        List<String> more = new ArrayList<>(copies);
        more.add(id);
        return new TagPlacement(tenant, tag, node, more, recordedAtUnix);
    }

    TagPlacement withoutCopy(String id) {
        return new TagPlacement(tenant, tag, node, copies.stream().filter(c -> !c.equals(id)).toList(), recordedAtUnix);
    }

    /** The record key of a tenant's tag: tags are per tenant, and a tenant may hold characters a key may not. */
    static String key(String tenant, String tag) {
        try {
            byte[] d = MessageDigest.getInstance("SHA-256").digest((tenant + "\n" + tag).getBytes(StandardCharsets.UTF_8));
            return "t" + HexFormat.of().formatHex(d, 0, 20);
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }
}
