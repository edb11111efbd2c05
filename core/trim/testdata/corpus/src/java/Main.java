import java.util.HashMap;
import java.util.Map;

public class Main {
    static Map<String, String> config = new HashMap<>();

    static int port() {
        return Integer.parseInt(config.get("port").trim());
    }

    static void start() {
        try {
            System.out.println("binding on port " + port());
        } catch (NullPointerException e) {
            throw new IllegalStateException("server config is incomplete", e);
        }
    }

    public static void main(String[] args) {
        for (int i = 1; i <= 400; i++) {
            System.out.printf("[main] INFO  loading module %03d of 400 (cache hit)%n", i);
        }
        config.put("host", "0.0.0.0");
        start();
    }
}
