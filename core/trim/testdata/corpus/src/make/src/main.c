#include <stdio.h>

int mod000(int);
int checksum(const char *s);

int main(void)
{
    printf("%d %d\n", mod000(1), checksum("abc"));
    return 0;
}
