package io.vivarium.fleet.internal;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;

/** Which node holds a tenant's snapshot tag (built or branched there): its forks, info and delete go to that node. */
record TagPlacement(String tenant, String tag, String node) {

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
