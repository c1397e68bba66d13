package io.vivarium.api;

import java.util.List;

import org.osgi.annotation.versioning.ProviderType;

/**
 * Runtime administration: which bundles run, installing, updating and removing plugin bundles,
 * and enabling or disabling features, all while sandboxes keep running. Every change refreshes
 * only the bundles it requires; a change that cannot resolve is rolled back and reported as an
 * {@link ApiException} naming the unresolved requirement, leaving the running set as it was.
 */
@ProviderType
public interface PluginService {

    List<PluginInfo> plugins();

    /** Installs and starts a bundle from its jar; 400 if it is not a bundle or does not resolve, 409 if installed. */
    PluginInfo install(byte[] jar);

    /** Replaces the bundle of that symbolic name with the jar (a new version of it); 404 if not installed. */
    PluginInfo update(String symbolicName, byte[] jar);

    /** Stops and uninstalls the bundle; 404 if not installed. */
    void uninstall(String symbolicName);

    List<FeatureInfo> features();

    /** Installs and starts the feature's bundles that are not running yet. */
    FeatureInfo enable(String feature);

    /** Uninstalls the feature's bundles that no other enabled feature needs. */
    FeatureInfo disable(String feature);
}
