/* SHA-256 against the FIPS 180-4 example digests and lengths around the padding edge
 * (digests from Python's hashlib). */
#include <math.h>
#include <string.h>

#include "check.h"
#include "base/sha256.h"

int main(void)
{
    char hex[65];
    sha256_hex(hex, "", 0);
    CHECK(!strcmp(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"));
    sha256_hex(hex, "abc", 3);
    CHECK(!strcmp(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"));
    const char *two = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
    sha256_hex(hex, two, strlen(two));
    CHECK(!strcmp(hex, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"));
    char a55[55], a64[64];
    memset(a55, 'a', sizeof(a55));
    memset(a64, 'a', sizeof(a64));
    sha256_hex(hex, a55, sizeof(a55));
    CHECK(!strcmp(hex, "9f4390f8d30c2dd92ec9f095b65e2b9ae9b0a925a5258e241c9f1e910f734318"));
    sha256_hex(hex, a64, sizeof(a64));
    CHECK(!strcmp(hex, "ffe054fe7ae0cb6dc65c3af9b61d5209f439851db43d0ba5997337df154668eb"));
    return check_finish("sha256");
}
