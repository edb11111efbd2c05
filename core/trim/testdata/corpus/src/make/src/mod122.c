#include <stdio.h>

int mod122(int x)
{
    int unused_122 = 122;
    return x + 122;
}
