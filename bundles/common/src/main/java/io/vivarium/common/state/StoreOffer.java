package io.vivarium.common.state;

import java.util.Map;

import io.vivarium.api.state.StateStoreProvider;

import org.osgi.framework.BundleContext;
import org.osgi.framework.FrameworkUtil;
import org.osgi.framework.ServiceRegistration;

/**
 * A store bundle's offer to core: its {@link StateStoreProvider} is registered only when the
 * operator chose that store ({@link StateStoreProvider#CHOICE}), so core always finds exactly one.
 */
public final class StoreOffer {
    private ServiceRegistration<StateStoreProvider> registration;

    /** Whether {@code name} is the chosen store; the default one is chosen when nothing is named. */
    public static boolean chosen(BundleContext ctx, String name, boolean isDefault) {
        String choice = ctx.getProperty(StateStoreProvider.CHOICE);
        return choice == null || choice.isBlank() ? isDefault : choice.strip().equals(name);
    }

    /** Registers {@code provider} as store {@code name}. */
    public void offer(BundleContext ctx, String name, StateStoreProvider provider) {
        registration = ctx.registerService(StateStoreProvider.class, provider,
                FrameworkUtil.asDictionary(Map.of(StateStoreProvider.NAME, name)));
    }

    public void withdraw() {
        if (registration != null) {
            registration.unregister();
            registration = null;
        }
    }
}
