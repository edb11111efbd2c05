#include <stdio.h>

int mod044(int x)
{
    int unused_44 = 44;
    return x + 44;
}
