package io.vivarium.api;

import java.util.List;
import java.util.regex.Pattern;

import org.osgi.annotation.versioning.ProviderType;

/**
 * Named volumes that outlive sandboxes, provided by core for {@code /v1/volumes}
 * (docs/volumes.md): a file system of a fixed size, per tenant, mounted in sandboxes at create
 * ({@link CreateSandboxRequest#volumes()}) by backends that report {@link Capability#VOLUMES}.
 * Its files stay when the sandboxes go; they are complete in the next sandbox that mounts it.
 * Every method is scoped to the caller's tenant (404 for a name it does not have) and throws
 * {@link ApiException} for what the caller can fix. Since 2.7.
 */
@ProviderType
public interface VolumeService {
    /** A volume's name: lower-case letters, digits, '.', '_' and '-', starting with a letter or digit. */
    Pattern NAME = Pattern.compile("[a-z0-9][a-z0-9._-]{0,62}");
    /** The smallest volume (an ext4 file system with its journal). */
    int MIN_SIZE_MIB = 16;
    /** The largest volume. */
    int MAX_SIZE_MIB = 1 << 20;

    /** Makes an empty volume of {@code sizeMib}; 409 if the tenant has one of that name. */
    VolumeInfo create(Caller caller, String name, int sizeMib);

    /** The tenant's volumes, by name. */
    List<VolumeInfo> list(Caller caller);

    VolumeInfo get(Caller caller, String name);

    /** Deletes a volume and its files; 409 while a sandbox mounts it, naming the sandboxes. */
    void delete(Caller caller, String name);
}
